/** The user of the current async context, for integrations that cannot be handed a user id. */
import { AsyncLocalStorage } from "node:async_hooks";

const storage = new AsyncLocalStorage<string>();

export function runWithUser<T>(userId: string, fn: () => T): T {
  return storage.run(userId, fn);
}

/** The user id set by the closest enclosing `meter.withUser(...)`, or undefined. */
export function currentUser(): string | undefined {
  return storage.getStore();
}
