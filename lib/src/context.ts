import { AsyncLocalStorage } from "node:async_hooks";

/** Per-request values carried through a service, and onward on its outgoing RPC calls. */
export interface RequestContext {
  requestId: string;
}

export const REQUEST_ID_HEADER = "x-request-id";

const storage = new AsyncLocalStorage<RequestContext>();

export function runWithContext<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}
