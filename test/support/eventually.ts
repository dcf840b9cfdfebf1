/**
 * Polls until `check` returns a truthy value and returns it, or fails after `timeoutMs` naming
 * `what` (and the last error `check` threw, if any). For anything asynchronous a test waits
 * on: a delivery, a handover, a process starting.
 */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 60_000, what = "condition"): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
