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
 * small tasks that would have passed in no time. And a task already waiting is refused the
 * same way as soon as the time it has waited and its own turn pass `maxWaitMs`: a burst that
 * arrives before any task of its key has finished finds no pace to judge by (a fresh product, a
 * restarted process), so the whole burst used to wait, past its clients' timeouts, which then
 * sent it again while the first copies were still to be stored.
 */
export class KeyedGate {
  private readonly keys = new Map<string, { running: number; waiting: Waiter[] }>();
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
      const line = k;
      await new Promise<void>((resolve, reject) => {
        const w: Waiter = { arrived: this.now(), admit: resolve, refuse: reject };
        line.waiting.push(w);
        if (this.maxWaitMs > 0) this.watch(key, line, w);
      });
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
      if (next) {
        clearTimeout(next.timer);
        next.admit();
      } else if (--k.running === 0) this.keys.delete(key);
      // The pace just changed (or became known): those it makes late are told now. The line is in
      // arrival order, so the late ones are at its front: stop at the first that is not.
      if (this.maxWaitMs > 0) while (k.waiting.length > 0 && this.refuseIfLate(key, k, k.waiting[0]!));
    };
  }

  /** Checks a waiting task when its time would run out at the present pace, until it is admitted or refused. */
  private watch(key: string, line: { waiting: Waiter[] }, w: Waiter): void {
    if (this.refuseIfLate(key, line, w)) return;
    const left = this.maxWaitMs - (this.taskMs.get(key) ?? 0) - (this.now() - w.arrived);
    w.timer = setTimeout(() => this.watch(key, line, w), Math.max(1, left) + 1);
    w.timer.unref?.();
  }

  /**
   * Refuses a waiting task (busy) whose wait so far and its own turn at the key's pace pass
   * `maxWaitMs`; the hint is what it would still wait for its place, at least 1 s.
   */
  private refuseIfLate(key: string, line: { waiting: Waiter[] }, w: Waiter): boolean {
    const at = line.waiting.indexOf(w);
    if (at < 0) return true;
    const taskMs = this.taskMs.get(key) ?? 0;
    const waited = this.now() - w.arrived;
    if (waited + taskMs <= this.maxWaitMs) return false;
    line.waiting.splice(at, 1);
    clearTimeout(w.timer);
    const s = Math.max(1, Math.ceil((((at + 1) / this.limit) * taskMs) / 1000));
    w.refuse(rpcError.busy(`this batch waited ${Math.round(waited / 1000)} s behind others of its product, which take about ${Math.round(taskMs / 1000)} s each; retry in ${s} s`, s));
    return true;
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

/** A task waiting for its key's place. */
interface Waiter {
  arrived: number;
  admit(): void;
  refuse(err: Error): void;
  timer?: ReturnType<typeof setTimeout>;
}
