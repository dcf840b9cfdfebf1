/**
 * What the reads show of a team (BUDGETS.md §4): the session view's `team` block and the team
 * dimensions of a member (or of the team alone). Reads by `_id` only: the team's period counter
 * and, when its plan has team-scope limits, the team's window document. A team's windows are
 * counted in both (teams/shares.ts inPeriodWindow): those within the period in the counter.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SessionTeamSchema } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { toTimestamp } from "@meter/lib/time";
import { teamAt, type TeamAttribution } from "../domain/attribution.ts";
import type { CounterDoc, CounterStore } from "../store/counters.ts";
import { windowAt, windowDocId } from "../windows/shares.ts";
import type { WindowDoc, WindowStore } from "../windows/store.ts";
import { readGuessed, type EarlyRead } from "../windows/with-counter.ts";
import { teamDimensions } from "../windows/dimensions.ts";
import type { Dimension } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { currentUsage, planConfig } from "../handlers/plan-config.ts";
import { scopeOf } from "./shares.ts";
import type { CreditStore } from "../credits/store.ts";
import { teamCreditsInForce, sessionCredits, type TeamCredits } from "../credits/view.ts";

/** What reading a team needs. */
export interface TeamReadDeps {
  teamCounters: Pick<CounterStore, "get" | "spends">;
  teamWindows: Pick<WindowStore, "get" | "getWith">;
  credits: Pick<CreditStore, "account">;
}

/** A team's state as read for a view: its attribution now, its period counter and window document. */
export interface TeamState {
  a: TeamAttribution;
  counter: CounterDoc | null;
  windows: WindowDoc | null;
  /** The team's pool, when the team plan draws credits. */
  pool: TeamCredits | null;
}

/** Whether a team plan has limits of `scope` (what decides the window documents read). */
export const hasScope = (a: TeamAttribution | null, scope: "team" | "member") => a?.plan.limits.some((l) => scopeOf(l) === scope) ?? false;

/**
 * Reads a team's state (three reads by `_id` in parallel at most: the period counter with the
 * window document, the pool's account, the counter before); null without a team in force.
 * `early` reads are used where they read the documents the attribution names.
 */
export async function readTeam(deps: TeamReadDeps, productId: string, a: TeamAttribution | null, now: Date, early?: EarlyRead): Promise<TeamState | null> {
  if (!a) return null;
  const windowsId = hasScope(a, "team") ? windowDocId(productId, a.team.id) : null;
  const before = earlierCounterId(productId, a, now);
  const [{ counter, windows }, pool, earlier] = await Promise.all([
    readGuessed({ counters: deps.teamCounters, windows: deps.teamWindows }, a.counterId, windowsId, early),
    teamCreditsInForce(deps.credits, deps.teamCounters, productId, a, now),
    before === null ? null : deps.teamCounters.get(before),
  ]);
  return { a, counter, windows: windowsWithCounter(windows, [counter, earlier]), pool: pool && pool(counter?.cost ?? 0) };
}

/**
 * The team's counter of the period before the current one, when a team-scope calendar window
 * live at `now` began in it: that counter may hold the window's count from before the period
 * changed (a team subscription that started a new period within the window); null otherwise,
 * which is nearly always (a window crossing a period's bounds is counted in the window document).
 */
export function earlierCounterId(productId: string, a: TeamAttribution, now: Date): string | null {
  const start = a.period.start.getTime();
  const crosses = a.plan.limits.some((l) => scopeOf(l) === "team" && l.window !== "rolling" && windowAt(l, now.getTime(), a.plan.timeZone, a.period).start < start);
  if (!crosses) return null;
  const earlier = teamAt(productId, a.team, new Date(start - 1));
  return earlier && earlier.counterId !== a.counterId ? earlier.counterId : null;
}

/**
 * A team's window entries as one window document: the window document's and those its period
 * counters hold (CounterDoc.w). A share is counted in one place (teams/shares.ts inPeriodWindow
 * decides by the window and its event's period), so a window's count is in one document, or
 * split between them when a new period began within it: the counts of one field are added.
 */
export function windowsWithCounter(doc: WindowDoc | null, counters: readonly (Pick<CounterDoc, "_id" | "product_id" | "user_id" | "w"> | null)[]): WindowDoc | null {
  const inCounters = counters.flatMap((c) => (c ? Object.entries(c.w ?? {}).map(([k, v]) => ({ c, k, v })) : []));
  if (inCounters.length === 0) return doc;
  const w: WindowDoc["w"] = { ...doc?.w };
  for (const { k, v } of inCounters) {
    const had = Object.hasOwn(w, k) ? w[k] : undefined;
    w[k] = { n: Number(v.n) + Number(had?.n ?? 0), e: Number(v.e) };
  }
  const { c } = inCounters[0]!;
  return { ...(doc ?? { _id: c._id, product_id: c.product_id, user_id: c.user_id, jobs: {} }), w };
}

/** The session view's `team` block. */
export function sessionTeam(t: TeamState): MessageInitShape<typeof SessionTeamSchema> {
  const { a } = t;
  return {
    teamId: a.team.externalTeamId,
    serviceTeamId: a.team.id,
    plan: a.plan.name,
    planId: a.plan.id,
    planConfig: planConfig(a.plan),
    currentUsage: currentUsage(t.counter),
    billingPeriod: { start: toTimestamp(a.period.start), end: toTimestamp(a.period.end) },
    credits: t.pool ? sessionCredits(t.pool.view, a.plan.creditsLowAt) : undefined,
  };
}

/**
 * The team's dimensions: for a member (`member` its window document, which holds its member-scope
 * counts), every one; for the team alone (`member` "none"), the team-scope ones.
 */
export function teamLimits(t: TeamState | null, member: WindowDoc | null | "none", now: Date): Dimension[] {
  if (!t) return [];
  return teamDimensions(t.a.plan, t.a.period, t.counter, { teamId: t.a.team.id, team: t.windows, member }, now, t.pool?.cap);
}

/**
 * A member's own period cap with credits (`total_spend`), extended by what the team's pool still
 * allows the team (BUDGETS.md §4: the pool is drawn after the member's own grants, so a member
 * whose own credits ran out goes on while the pool lasts). Unchanged without a pool in force.
 */
export function ownCapWithPool<C extends { capNano: number }>(own: C | null | undefined, t: TeamState | null): C | null | undefined {
  const pool = t?.pool?.cap;
  if (!own || !pool) return own;
  return { ...own, capNano: own.capNano + Math.max(0, pool.capNano - (t!.counter?.cost ?? 0)) };
}
