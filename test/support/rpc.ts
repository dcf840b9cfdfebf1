import { ConnectError, type Code } from "@connectrpc/connect";

/** The error an RPC fails with, or undefined when it succeeds. */
export async function rpcFailure(p: Promise<unknown>): Promise<ConnectError | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  }
}

/** The Connect code an RPC fails with, or undefined when it succeeds. */
export async function rpcCode(p: Promise<unknown>): Promise<Code | undefined> {
  return (await rpcFailure(p))?.code;
}
