import { rpcError } from "./errors.ts";

/**
 * At most `limit` tasks of one key (a product) at once; the key's others wait their turn, first
 * come first served, and past `maxWaiting` waiting ones a new one is refused as busy (429 with
 * Retry-After: the client sends it again later). The gateway admits ingestion batches with
 * it before reading their bodies, and the ingestion service runs their writes with it, so one
 * product's burst occupies a bounded share of a process and of the database's write queue
 * however many requests it opens (docs/operations.md, "Limits"; ingestion README, "No noisy
 * neighbours"). `limit` 0 turns it off.
 *
 * With `maxWaitMs`, a task is also refused (busy, with the time beyond it as the hint) when the
 * line ahead of it and its own turn would take longer than that at the pace of the key's recent
 * tasks: a count alone held minutes of work when the database slowed down, or refused many
 * small tasks that would have passed in no time.
 */
export class KeyedGate {
  private readonly keys = new Map<string, { running: number; waiting: (() => void)[] }>();
  /** How long a task of each key held its place lately (ms, smoothed). */
  private readonly taskMs = new Map<string, number>();

  constructor(
    private readonly limit: number,
    private readonly maxWaiting = 256,
    private readonly maxWaitMs = 0,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Waits for a place; resolves with the function that gives it back (call it once). */
  async acquire(key: string): Promise<() => void> {
    if (this.limit <= 0) return () => {};
    let k = this.keys.get(key);
    if (!k) {
      k = { running: 0, waiting: [] };
      this.keys.set(key, k);
    }
    if (k.running < this.limit) {
      k.running++;
    } else {
      if (k.waiting.length >= this.maxWaiting) {
        throw rpcError.busy(`${this.maxWaiting} batches of this product are waiting already; retry in 1 s`, 1);
      }
      const taskMs = this.taskMs.get(key) ?? 0;
      const done = ((k.waiting.length + 1) / this.limit) * taskMs + taskMs;
      if (this.maxWaitMs > 0 && done > this.maxWaitMs) {
        const s = Math.ceil((done - this.maxWaitMs) / 1000);
        throw rpcError.busy(`the batches of this product ahead of this one take about ${Math.round(done / 1000)} s with it; retry in ${s} s`, s);
      }
      // A finishing task hands its place over: `running` stays as it is.
      await new Promise<void>((resolve) => k!.waiting.push(resolve));
    }
    const started = this.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const took = this.now() - started;
      const before = this.taskMs.get(key);
      this.taskMs.set(key, before === undefined ? took : 0.7 * before + 0.3 * took);
      const next = k.waiting.shift();
      if (next) next();
      else if (--k.running === 0) this.keys.delete(key);
    };
  }

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const release = await this.acquire(key);
    try {
      return await task();
    } finally {
      release();
    }
  }

  /** Tasks of `key` running and waiting now. */
  load(key: string): { running: number; waiting: number } {
    const k = this.keys.get(key);
    return { running: k?.running ?? 0, waiting: k?.waiting.length ?? 0 };
  }
}
