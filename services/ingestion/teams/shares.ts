/**
 * What a member's usage event adds to its team (BUDGETS.md §4), worked out when the event is
 * stored and kept on it (`team`), so that whoever completes its job (the request, a retry, the
 * recovery sweep) counts the team exactly when it counts the member. Pure, no I/O.
 */
import { normalizeModel } from "@meter/rules";
import type { LimitScope } from "@meter/lib/plan-limits";
import type { TeamAttribution } from "../domain/attribution.ts";
import { windowShares, type CountedEvent, type WindowLimit, type WindowShare } from "../windows/shares.ts";

/** The team part of a stored usage event. */
export interface TeamShare {
  /** Service team id: the team's counters and window document are keyed by it. */
  id: string;
  /** The team's period counter (collection `team_counters`) and the period it was attributed to. */
  counter_id: string;
  period_start: Date;
  period_end: Date;
  plan_name: string;
  spend_limit: number | null;
  /** The model as the team plan names it, when its prices name it otherwise than the event's. */
  model?: string;
  /** The model the team's counters file the event under when it is not the model (counter bounds). */
  counted_model?: string;
  /**
   * Set when the team plan draws credits (credits_enabled and an allowance): the member's spend
   * beyond its own credits goes to the team's pool (credits/settle.ts), owned by the external
   * team id `team_id`. `allowance` is the team plan's max_spend_per_period, `low_at` its credits_low_at.
   * `direct` when the member's own plan draws no credits: the whole event is the team's to pay,
   * counted in the team's pool counter (poolCounterId) beside its period counter.
   */
  credits?: { team_id: string; allowance: number; low_at: number | null; direct?: true };
  /** What the event adds to the team-scope windows of the team plan (the team's window document). */
  windows?: WindowShare[];
}

/**
 * Member-scope windows are counted in the member's own window document, under fields prefixed
 * with the team: a user's own dimension keys start with a metric, so they never meet these, and
 * a member moved to another team starts afresh there.
 */
export function memberPrefix(teamId: string): string {
  return `team:${teamId}:`;
}

/** A team plan's limit counts the team's sum unless it says member. */
export const scopeOf = (l: WindowLimit): LimitScope => (l.scope === "member" ? "member" : "team");

/**
 * The team share of an event of a member attributed to `a` at its timestamp, and the shares of
 * the plan's member-scope windows (for the member's window document). `rawModel` is the model as
 * sent (the team plan may normalize it otherwise than the member's).
 */
export function teamShare(
  a: TeamAttribution,
  e: CountedEvent,
  rawModel: string | null,
  now: Date,
): { team: TeamShare; member?: WindowShare[] } {
  const team: TeamShare = {
    id: a.team.id,
    counter_id: a.counterId,
    period_start: a.period.start,
    period_end: a.period.end,
    plan_name: a.plan.name,
    spend_limit: a.plan.maxSpendPerPeriod ?? null,
  };
  if (a.plan.creditsEnabled && a.plan.maxSpendPerPeriod !== undefined) team.credits = { team_id: a.team.externalTeamId, allowance: a.plan.maxSpendPerPeriod, low_at: a.plan.creditsLowAt ?? null };
  const model = rawModel === null ? null : normalizeModel(rawModel, a.plan.pricing);
  if (model !== e.model) team.model = model!;
  const counted = { ...e, model };
  const of = (scope: LimitScope) => {
    const limits = a.plan.limits.filter((l) => scopeOf(l) === scope);
    return limits.length === 0 ? undefined : windowShares({ limits, timeZone: a.plan.timeZone }, a.period, counted, now);
  };
  const windows = of("team");
  if (windows) team.windows = windows;
  const prefix = memberPrefix(a.team.id);
  const member = of("member")?.map((s) => ({ ...s, key: prefix + s.key }));
  return member ? { team, member } : { team };
}

/**
 * Whether a team window's share is counted in the team's period counter (store/counters.ts
 * CounterDoc.w) rather than in the team's window document: a calendar or period window that lies
 * within the period the event is attributed to. Every event counted in such a window is of that
 * period, so the period's counter holds its whole count, and one update counts a team's
 * job. Rolling windows, and calendar windows crossing the period's bounds, go on in the window
 * document. Decided from the stored share alone, so every completion of a job decides alike.
 */
export function inPeriodWindow(s: WindowShare, periodStart: Date, periodEnd: Date): boolean {
  const bar = s.key.lastIndexOf("|");
  // windowField: `<dimension>|<start>`, the dimension `<metric>:<window>:...`.
  if (s.key.slice(0, bar).split(":", 2)[1] === "rolling") return false;
  return Number(s.key.slice(bar + 1)) >= periodStart.getTime() && s.end <= periodEnd.getTime();
}

/**
 * The team's pool counter of a team period (in `team_counters`): the spend of the members whose
 * own plans draw no credits, all of it the team's to pay (credits/settle.ts). The suffix keeps it
 * apart from every period counter (whose ids end with a service team id).
 */
export function poolCounterId(teamCounterId: string): string {
  return `${teamCounterId}|pool`;
}

/**
 * Puts the team share of `a` on an event about to be stored (and its member-scope shares among
 * its windows). `credits` on the event (its own plan draws credits) is already set.
 */
export function addTeamShare(
  doc: CountedEvent & { team?: TeamShare; windows?: WindowShare[]; credits?: object },
  a: TeamAttribution | null,
  rawModel: string | null,
  now: Date,
): void {
  if (!a) return;
  const { team, member } = teamShare(a, doc, rawModel, now);
  if (team.credits && doc.credits === undefined) team.credits.direct = true;
  doc.team = team;
  if (member) doc.windows = [...(doc.windows ?? []), ...member];
}
