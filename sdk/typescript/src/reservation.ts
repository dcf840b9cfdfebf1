/**
 * A checked call in flight: what `reserve()` returns. When the plan has pre_call_estimate, it
 * holds the call's estimated cost (and tokens) against the limits until it is committed with
 * the real usage or released.
 */
import { MeterError } from "./errors.ts";
import type { Session } from "./sessions.ts";
import type { UserEntry } from "./state.ts";
import type { GuardResult, UsageEvent, UsageInput } from "./types.ts";

/** What a reservation needs of the Meter that made it. */
export interface Ledger {
  settle(hold: Hold, usage: UsageInput): UsageEvent;
  unhold(hold: Hold): void;
}

/** The amounts held for one call. */
export interface Hold {
  entry: UserEntry;
  session: Session;
  model: string | null;
  cost: number;
  tokens: number;
  metadata: Record<string, unknown> | undefined;
  /** The budget lease the estimate was taken from (`leases: true`). */
  lease?: string | null;
}

let commitNowOf: (r: Reservation, usage: UsageInput) => UsageEvent;

/** commit() in the caller's tick, throwing what it rejects with: the integrations commit every model call. Internal (src/internal.ts). */
export function commitNow(r: Reservation, usage: UsageInput = {}): UsageEvent {
  return commitNowOf(r, usage);
}

export class Reservation {
  readonly user_id: string;
  readonly session_id: string;
  /** Normalized model name, or null. */
  readonly model: string | null;
  readonly result: GuardResult;
  #ledger: Ledger;
  #hold: Hold;
  #state: "open" | "committed" | "released" = "open";

  constructor(ledger: Ledger, hold: Hold, result: GuardResult) {
    this.#ledger = ledger;
    this.#hold = hold;
    this.user_id = hold.entry.userId;
    this.session_id = hold.session.id;
    this.model = hold.model;
    this.result = result;
  }

  /** Records the call's real usage and gives back the estimate. Once only; not after release(). */
  async commit(usage: UsageInput = {}): Promise<UsageEvent> {
    return this.#commit(usage);
  }

  static {
    commitNowOf = (r, usage) => r.#commit(usage);
  }

  #commit(usage: UsageInput): UsageEvent {
    if (this.#state !== "open") throw new MeterError(`reservation already ${this.#state}`);
    const event = this.#ledger.settle(this.#hold, usage);
    this.#state = "committed";
    return event;
  }

  /** Nothing is recorded and the estimate is given back. Idempotent; no effect after commit(). */
  release(): void {
    if (this.#state !== "open") return;
    this.#state = "released";
    this.#ledger.unhold(this.#hold);
  }
}
