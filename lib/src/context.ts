import { AsyncLocalStorage } from "node:async_hooks";

/** Per-request values carried through a service, and onward on its outgoing RPC calls. */
export interface RequestContext {
  requestId: string;
}

export const REQUEST_ID_HEADER = "x-request-id";

/** Longest request id accepted from a caller; longer ones are replaced, not cut. */
export const MAX_REQUEST_ID_LENGTH = 128;
const REQUEST_ID = /^[A-Za-z0-9._:+=\/-]+$/;

/**
 * Whether a caller's request id may be reused as is. It ends up in every log line and on
 * every internal call, so it is bounded in length and limited to characters that cannot
 * split a log line or a header; anything else is replaced by a generated id.
 */
export function isAcceptableRequestId(value: string | null | undefined): value is string {
  return !!value && value.length <= MAX_REQUEST_ID_LENGTH && REQUEST_ID.test(value);
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runWithContext<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}
