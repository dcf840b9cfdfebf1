/**
 * A checked call in flight: what `reserve()` returns. It holds the call's reservation (cost and
 * tokens) against the limits until it is committed with the real usage or released: with the
 * plan's pre_call_estimate its estimate, otherwise the user's typical call (see reservationOf).
 */
import { MeterError } from "./errors.ts";
import type { TeamEntry } from "./team-state.ts";
import type { RecentCalls } from "./recent-calls.ts";
import type { Held, UserEntry } from "./state.ts";
import type { GuardResult, UsageEvent, UsageInput } from "./types.ts";

/** What a reservation needs of the Meter that made it. */
export interface Ledger {
  settle(hold: Hold, usage: UsageInput): UsageEvent;
  unhold(hold: Hold): void;
}

/** The amounts held for one call (with the windows they are held on, state.ts Held). */
export interface Hold extends Held {
  entry: UserEntry;
  metadata: Record<string, unknown> | undefined;
  /** The budget lease the estimate was taken from (`leases: true`), and the window slices it was taken from. */
  lease?: string | null;
  leaseWindows?: readonly WindowNeed[];
  /** The team whose lease slices (of the team's period spend cap and team-scope windows) the estimate was taken from, and those windows. */
  leaseTeam?: TeamEntry | null;
  leaseTeamWindows?: readonly WindowNeed[];
  /** The member-scope windows of the team plan whose slices (the member's own) the estimate was taken from. */
  leaseMemberWindows?: readonly WindowNeed[];
  /** The periods (their ends) of the user's and the team's lease books the estimate was taken in (Leases.take()). */
  leasePeriods?: LeasePeriods;
}

/** The periods a lease hold was taken in: a new period's slices start afresh and are given back nothing taken in the last one. */
export interface LeasePeriods {
  user: number;
  team: number;
}

/** What a reserved call holds, and whether the check counts it as this call's estimate. */
/** One window of the plan's limits a call counts in. */
export interface WindowNeed {
  /** `<dimension>|<window start>`, or `<dimension>|r` for a rolling window: one slice each. */
  key: string;
  dimension: string;
  start: number | null;
  end: number;
  /** The call's amount in the limit's unit: its estimate in nano-dollars or tokens, 1 request. */
  amount: number;
  /** Index of the (first) limit of this dimension in the plan. */
  limit: number;
  /** The lease must hold all of it: a request (the call itself) or a pre-call estimate. */
  whole: boolean;
}

export interface ReservationAmount {
  cost: number;
  tokens: number;
  /**
   * True with pre_call_estimate: the call is blocked when its estimate would take usage past
   * the hard gate, and a lease must cover all of it. False (the default): the call runs while
   * usage plus what the calls in flight hold is below the hard gate, and holds its amount.
   */
  exact: boolean;
}

/**
 * The rule of what a call reserves. With pre_call_estimate: its estimate, input tokens plus the
 * request's output limit, else pre_call_buffer_tokens. Without: the user's typical call of the
 * model (the largest of the last TYPICAL_CALLS real ones), so that calls in flight hold back the
 * ones after them near a cap; a user's first call of a model (no history yet) reserves the
 * estimate instead. `inputTokens` is asked for only when the estimate is needed.
 */
export function reservationOf(
  preCallEstimate: boolean,
  recent: RecentCalls | undefined,
  inputTokens: () => number,
  maxOutputTokens: number | undefined,
  bufferTokens: number,
  cost: (inputTokens: number, outputTokens: number) => number,
): ReservationAmount {
  if (!preCallEstimate && recent !== undefined) return { ...recent.typical(), exact: false };
  const inTokens = inputTokens();
  const outTokens = maxOutputTokens ?? bufferTokens;
  return { cost: cost(inTokens, outTokens), tokens: inTokens + outTokens, exact: preCallEstimate };
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
