/**
 * The check of guard() and reserve(): the plan's gates over the user's counters and the call's
 * estimate (and for a team's member the team plan's over the team's and the member's), the lease's share with `leases: true`, and what a gate sets off (a gate event at
 * most once per kind per 5 s, the callbacks, LimitExceededError when blocking). From the entry
 * on it is synchronous, so that a check and its hold are one step.
 */
import { randomUUID } from "node:crypto";
import type { Callbacks } from "./callbacks.ts";
import { now as clockNow } from "./clock.ts";
import { sessionOf } from "./context.ts";
import { LimitExceededError, MeterTypeError, MeterUnavailableError } from "./errors.ts";
import { evaluate } from "./gates.ts";
import type { LeaseNeed, Leases } from "./leases.ts";
import { own } from "./own.ts";
import { addDollars } from "./rules/index.ts";
import { estimateTokens, rateOf, tokenCost } from "./pricing.ts";
import type { EventQueue } from "./queue.ts";
import { Reservation, reservationOf, type Hold, type LeasePeriods, type Ledger, type ReservationAmount } from "./reservation.ts";
import type { Session } from "./user-sessions.ts";
import type { UserEntry } from "./state.ts";
import { checkMetadata, checkNames, ownMetadata } from "./validate.ts";
import type { GateContext, GateEvent, GuardInput, GuardResult, LimitCredits } from "./types.ts";

/**
 * One gate event per (user, gate_reason, status) per this many ms at most, status being soft,
 * hard, or hard and blocked: a hard gate is never hidden behind the soft gate before it.
 */
const GATE_EVENT_INTERVAL_MS = 5_000;
/** What a call of a user without a plan reserves, and what guard() checks without pre_call_estimate. */
const NOTHING: ReservationAmount = { cost: 0, tokens: 0, exact: false };
/** The gate reason of a user held back by `failClosed`; no gate event is written for it (the service could not take one). */
const SESSION_UNAVAILABLE = "session_unavailable";
/** Retry-After of a call failClosed blocked: a failed session load is tried again within 5 s (users.ts). */
const UNAVAILABLE_RETRY_MS = 5_000;
/**
 * A user blocked because the credits ran out has the view read again at most this often (at
 * its calls), so that a top-up, which no change poll announces, lifts the block within seconds.
 */
const CREDITS_RELOAD_MS = 5_000;

export interface AdmissionSettings {
  blocking: boolean;
  failClosed: boolean;
}

export class Admission {
  constructor(
    private readonly settings: AdmissionSettings,
    private readonly leases: Leases | null,
    private readonly queue: EventQueue,
    private readonly callbacks: Callbacks,
    private readonly ledger: Ledger,
  ) {}

  /** The check at `now`; with `hold`, the call's reservation held against the limits as a Reservation. */
  admit(e: UserEntry, input: GuardInput, hold: boolean, now = clockNow()): GuardResult | Reservation {
    checkEstimateInput(input);
    const plan = e.config;
    const model = e.model(input.model);
    const session = e.sessions.at(sessionOf(e.userId, input.session_id), now, e.timeoutMs);
    // Without pre_call_estimate the check does not read the call's own reservation: guard() skips it.
    const reserved = hold || plan?.pre_call_estimate ? this.reservation(e, model, input) : NOTHING;
    const { cost, tokens } = reserved;
    e.advanceWindows(now);
    if (e.credits !== null && now >= e.credits.nextExpiry) this.callbacks.credits(e.creditNews(now));
    let result = evaluate(e.config, {
      periodCost: addDollars(e.periodCost, e.reservedCost),
      sessionCost: addDollars(session.cost, session.reserved),
      model,
      modelTokens: model === null ? 0 : (own(e.tokensByModel, model) ?? 0) + (own(e.reservedTokens, model) ?? 0),
      estimateCost: reserved.exact ? cost : 0,
      estimateTokens: reserved.exact ? tokens : 0,
      periodEnd: e.periodEndMs,
      // A caller's session lasts as long as it is used: no known end.
      sessionEnd: session === e.sessions.own ? session.startedAt + e.timeoutMs : null,
      counters: e.counters,
    }, e.teamGate(model));
    if (this.settings.failClosed && !e.loaded && !e.unknown) result = unavailable(e.userId);
    let lease: string | null = null;
    let leasePeriods: LeasePeriods | undefined;
    const need = hold && result.status !== "hard_gate" && this.leases ? this.leases.need(e, model, reserved) : null;
    if (need) {
      const taken = this.leases!.take(e, need);
      if ("refused" in taken) result = taken.refused;
      else ({ leaseId: lease, periods: leasePeriods } = taken);
    }
    if (result.status !== "ok") this.gated(e, session, model, result, input.metadata, now);
    if (!hold) return result;
    // One object for the hold and its release: it carries the windows it held on (state.ts).
    const held: Hold = { entry: e, session, model, cost, tokens, metadata: input.metadata, lease, leaseWindows: lease === null ? undefined : need?.windows, leaseTeam: lease === null ? undefined : need?.team, leaseTeamWindows: lease === null ? undefined : need?.teamWindows, leaseMemberWindows: lease === null ? undefined : need?.memberWindows, leasePeriods };
    e.hold(held);
    return new Reservation(this.ledger, held, result);
  }

  /** With leases, the input with its input tokens when its reservation reads them: the lease's need and the check both do, so the prompt is sized once. */
  sized(e: UserEntry, input: GuardInput): GuardInput {
    const plan = pricingPlan(e);
    if (!this.leases || input.input_tokens !== undefined || plan === null) return input;
    if (!plan.pre_call_estimate && e.recentCalls(e.model(input.model)) !== undefined) return input;
    return { ...input, input_tokens: estimateTokens(input.prompt) };
  }

  /** What a reserved call needs from the user's lease, or null when leases do not apply to it. */
  leaseNeed(e: UserEntry, input: GuardInput): LeaseNeed | null {
    checkEstimateInput(input);
    const model = e.model(input.model);
    return this.leases!.need(e, model, this.reservation(e, model, input));
  }

  /** What the call reserves (reservationOf): its estimate with pre_call_estimate, else the user's typical call. */
  private reservation(e: UserEntry, model: string | null, input: GuardInput): ReservationAmount {
    const plan = pricingPlan(e);
    if (plan === null) return NOTHING;
    return reservationOf(
      plan.pre_call_estimate,
      e.recentCalls(model),
      () => input.input_tokens ?? estimateTokens(input.prompt),
      input.max_output_tokens,
      plan.pre_call_buffer_tokens,
      (inTokens, outTokens) => tokenCost(inTokens, outTokens, rateOf(model, plan)),
    );
  }

  /** A soft or hard gate: gate event (rate-limited), callbacks, then the error when blocking. */
  private gated(e: UserEntry, session: Session, model: string | null, result: GuardResult, metadata: Record<string, unknown> | undefined, now: number): void {
    const hard = result.status === "hard_gate";
    const blocked = hard && this.settings.blocking;
    const reason = result.gate_reason!;
    // A session cap is a cap per session: two conversations at their caps are two gates.
    const key = `${hard ? (blocked ? "blocked" : "hard_gate") : "soft_gate"} ${reason}${reason === "session_spend" ? ` ${session.id}` : ""}`;
    // Prepaid credits (or a team's pool) that ran out: the gate event says so, as the error does (BUDGETS.md §3).
    const credits = hard ? creditsOf(e, result) : null;
    // Not the service's to record when the session is unavailable: it could not be reached, or refused the key.
    const due = reason === SESSION_UNAVAILABLE ? null : e.gateEventDue(key, now, GATE_EVENT_INTERVAL_MS);
    if (due) {
      // How many gates of this kind were not written since the last event of it.
      const suppressed = due.suppressed;
      const event: GateEvent = {
        id: randomUUID(),
        user_id: e.userId,
        service_user_id: e.serviceUserId,
        session_id: session.id,
        timestamp: new Date(now).toISOString(),
        status: hard ? "hard_gate" : "soft_gate",
        gate_reason: reason,
        usage_pct: result.usage_pct,
        current_value: result.current_value,
        limit_value: result.limit_value,
        model,
        blocked,
        message: result.message,
        metadata: {
          ...ownMetadata(metadata),
          ...(suppressed > 0 && { suppressed_events: suppressed }),
          ...(credits !== null && { credits: { balance: credits.balance, low_at: credits.lowAt } }),
        },
      };
      if (this.queue.push("gate", event)) e.queued();
    }
    const ctx: GateContext = { user_id: e.userId, session_id: session.id, model };
    this.callbacks.gate(hard, result, ctx);
    if (blocked && reason === SESSION_UNAVAILABLE) throw new MeterUnavailableError(result, new Date(now + UNAVAILABLE_RETRY_MS));
    if (blocked) {
      if (credits !== null) e.reloadWithin(now, CREDITS_RELOAD_MS);
      throw new LimitExceededError(result, undefined, credits);
    }
  }
}

/**
 * The plan that prices a user's calls: its own, else, for a member of a team with a plan in
 * force, the team plan (as the service prices them), so that a member's reservation and its
 * lease of the team's cap count what its calls cost.
 */
function pricingPlan(e: UserEntry) {
  return e.config ?? e.team?.config ?? null;
}

/** What a block names of the user's credits, or its team's pool, when they are what ran out (credits.ts), else null. */
function creditsOf(e: UserEntry, result: GuardResult): LimitCredits | null {
  // A team's pool that ran out (BUDGETS.md §4): named as the user's credits are.
  const pool = e.team?.poolBlock(result.gate_reason, result.status, result.current_value) ?? null;
  if (pool !== null) return pool;
  const c = e.credits?.block(result.gate_reason, result.status, result.current_value, e.periodCost) ?? null;
  return c === null ? null : { balance: c.balance, lowAt: c.low_at };
}

/** The hard gate of a user whose session could not be loaded, under failClosed. */
function unavailable(userId: string): GuardResult {
  return {
    status: "hard_gate",
    gate_reason: SESSION_UNAVAILABLE,
    usage_pct: 0,
    current_value: 0,
    limit_value: 0,
    resets_at: null,
    message: `The metering service is unavailable: the session of ${userId} could not be loaded (service unreachable or API key refused), and failClosed blocks calls until it loads`,
  };
}

function checkEstimateInput(input: GuardInput): void {
  checkMetadata(input.metadata);
  // The gate event, and the usage a reservation commits, carry them.
  checkNames(input);
  if (input.input_tokens !== undefined && !isCount(input.input_tokens)) throw new MeterTypeError("input_tokens must be a non-negative integer");
  if (input.max_output_tokens !== undefined && !isCount(input.max_output_tokens)) throw new MeterTypeError("max_output_tokens must be a non-negative integer");
}

function isCount(x: unknown): boolean {
  return Number.isSafeInteger(x) && (x as number) >= 0;
}
