/**
 * Writes in rounds, as a database's group commit shares one log flush among the transactions
 * that wait for it: a write asked for while a round of its key runs joins the key's next round,
 * and that round takes every write of the key queued by then in one go. An idle key starts a
 * write at once (after `gather`, when given), so a lone caller waits no longer than before;
 * under concurrency, callers of one key share one write instead of racing for it (the lease
 * store grants a counter's requests so, leases/store.ts; ingestion's counters and window
 * documents take the deltas of concurrent jobs so, store/rounds.ts). Keys run their rounds
 * independently.
 *
 * `flush` answers each item of a round with its result or an Error of its own (one caller's
 * failure need not fail the others); a throw fails every item of the round.
 */
export class GroupCommit<T, R> {
  /** The writes waiting for their key's next round, by key (present while a round of the key runs). */
  private readonly waiting = new Map<string, Queued<T, R>[]>();

  /**
   * `gather`, when given, is awaited before each round takes its queue: writes announced as on
   * their way (see CounterStore.expect) may join that round rather than start the next.
   */
  constructor(
    private readonly flush: (items: T[], key: string) => Promise<(R | Error)[]>,
    private readonly gather?: () => Promise<void>,
  ) {}

  run(item: T, key = ""): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const queue = this.waiting.get(key);
      if (queue) return void queue.push({ item, resolve, reject });
      this.waiting.set(key, [{ item, resolve, reject }]);
      void this.rounds(key);
    });
  }

  private async rounds(key: string): Promise<void> {
    const queue = this.waiting.get(key)!;
    while (queue.length > 0) {
      // A gathering that fails only ends the wait: the writes go on.
      if (this.gather) await this.gather().catch(() => {});
      const round = queue.splice(0, queue.length);
      try {
        const results = await this.flush(round.map((q) => q.item), key);
        round.forEach((q, i) => {
          const r = results[i]!;
          if (r instanceof Error) q.reject(r);
          else q.resolve(r);
        });
      } catch (err) {
        for (const q of round) q.reject(err);
      }
    }
    this.waiting.delete(key);
  }
}

interface Queued<T, R> {
  item: T;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}
