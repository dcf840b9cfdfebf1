/**
 * Writes in rounds, as a database's group commit shares one log flush among the transactions
 * that wait for it: a write asked for while a round runs joins the next round, and the round
 * takes every write queued by then in one go. An idle writer starts a write at once, so a lone
 * caller waits no longer than before; under concurrency, callers that touch the same documents
 * share one statement a document instead of one each.
 *
 * `flush` answers each item of a round with its result or an Error of its own (one caller's
 * failure need not fail the others); a throw fails every item of the round.
 */
export class GroupCommit<T, R> {
  private queued: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private running = false;

  constructor(private readonly flush: (items: T[]) => Promise<(R | Error)[]>) {}

  run(item: T): Promise<R> {
    const done = new Promise<R>((resolve, reject) => this.queued.push({ item, resolve, reject }));
    if (!this.running) void this.rounds();
    return done;
  }

  private async rounds(): Promise<void> {
    this.running = true;
    while (this.queued.length > 0) {
      const round = this.queued;
      this.queued = [];
      try {
        const results = await this.flush(round.map((q) => q.item));
        round.forEach((q, i) => {
          const r = results[i]!;
          if (r instanceof Error) q.reject(r);
          else q.resolve(r);
        });
      } catch (err) {
        for (const q of round) q.reject(err);
      }
    }
    this.running = false;
  }
}
