import { ConnectError, type Code } from "@connectrpc/connect";

/** The Connect code an RPC fails with, or undefined when it succeeds. */
export async function rpcCode(p: Promise<unknown>): Promise<Code | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return ConnectError.from(err).code;
  }
}
