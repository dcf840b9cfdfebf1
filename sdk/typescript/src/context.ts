/** The user (and session) of the current async context, for integrations that cannot be handed them. */
import { AsyncLocalStorage } from "node:async_hooks";

interface Scope {
  userId: string;
  sessionId: string | undefined;
}

const storage = new AsyncLocalStorage<Scope>();

export function runWithUser<T>(userId: string, sessionId: string | undefined, fn: () => T): T {
  return storage.run({ userId, sessionId }, fn);
}

/** The user id set by the closest enclosing `meter.withUser(...)`, or undefined. */
export function currentUser(): string | undefined {
  return storage.getStore()?.userId;
}

/** The call's session: the one it names, else the enclosing withUser()'s for this user, else the library's own (undefined). */
export function sessionOf(userId: string, given: string | null | undefined): string | null | undefined {
  if (given !== undefined) return given;
  return currentUser() === userId ? currentSession() : undefined;
}

/** The session id set by the closest enclosing `meter.withUser(userId, fn, { session_id })`, or undefined. */
export function currentSession(): string | undefined {
  return storage.getStore()?.sessionId;
}
