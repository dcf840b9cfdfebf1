import { rpcError } from "./errors.ts";

/** Longest retry hint given (s): past it a client's own backoff ceiling takes over anyway. */
const MAX_HINT_S = 60;

/**
 * A bound on the work a process has taken on and not finished (events of ingestion batches,
 * running or waiting for their product's place). Work that arrives beyond it is refused at
 * once, `resource_exhausted` with a retry hint (the gateway answers 429 with Retry-After), so
 * that what a process holds is always what it stores within seconds: unbounded, a burst faster
 * than the database queued requests that went on being stored for tens of seconds after their
 * senders had given up (ingestion README, "Bounded work in flight"). A single piece larger than
 * the bound is taken when nothing else is held, so every valid batch can pass. `limit` 0: no bound.
 *
 * The hint is how long the work ahead of the refused piece takes at the pace this process has
 * been storing while busy (units per second of busy time, decayed with time constant `paceMs`).
 */
export class InFlightBound {
  private held = 0;
  /** Units finished and busy time (ms), both decayed with time constant `paceMs`, as of `at`. */
  private finished = 0;
  private busyMs = 0;
  private at: number;

  constructor(
    private readonly limit: number,
    private readonly paceMs = 10_000,
    private readonly now: () => number = () => performance.now(),
    private readonly onChange: (delta: number) => void = () => {},
  ) {
    this.at = this.now();
  }

  /** Units held now. */
  get inFlight(): number {
    return this.held;
  }

  /** Units finished per second of busy time lately; undefined before anything finished. */
  pace(): number | undefined {
    this.advance();
    return this.finished > 0 && this.busyMs > 0 ? (this.finished * 1000) / this.busyMs : undefined;
  }

  /**
   * Takes `units` or throws `resource_exhausted` with the retry hint; the function returned
   * gives them back (call it once, whatever the outcome of the work).
   */
  take(units: number, what: string): (finished?: boolean) => void {
    this.advance();
    if (this.limit > 0 && this.held > 0 && this.held + units > this.limit) {
      const seconds = this.retryAfterS(this.held + units - this.limit);
      throw rpcError.busy(`this replica holds ${this.held} ${what} not yet stored (at most ${this.limit}); retry in ${seconds} s`, seconds);
    }
    this.held += units;
    this.onChange(units);
    let released = false;
    return (finished = true) => {
      if (released) return;
      released = true;
      this.advance();
      this.held -= units;
      if (finished) this.finished += units;
      this.onChange(-units);
    };
  }

  /** Whole seconds until `excess` units have been stored at the recent pace: at least 1. */
  private retryAfterS(excess: number): number {
    const pace = this.pace();
    if (pace === undefined) return 1;
    return Math.min(MAX_HINT_S, Math.max(1, Math.ceil(excess / pace)));
  }

  private advance(): void {
    const t = this.now();
    const dt = t - this.at;
    if (dt <= 0) return;
    const keep = Math.exp(-dt / this.paceMs);
    this.finished *= keep;
    // Busy time counts only while something is held: idle time says nothing of the pace.
    this.busyMs = this.busyMs * keep + (this.held > 0 ? dt : 0);
    this.at = t;
  }
}
