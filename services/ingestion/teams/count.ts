/**
 * A usage job's team part (BUDGETS.md §4): the team shares its events carry (teams/shares.ts)
 * added to the teams' period and month counters (and pool counters: teams/shares.ts poolCounterId) and window documents, each under the same job
 * guard as the members' counters, in the same completion. So a retry, the recovery sweep or a
 * completion after a crash counts a team exactly when it counts its member: once.
 * The team's windows that lie within its period are counted in the period counter's own update
 * (teams/shares.ts inPeriodWindow): a team with calendar windows costs a job one update.
 */
import type { CounterStore } from "../store/counters.ts";
import type { WindowStore } from "../windows/store.ts";
import { deltas, type Attributed } from "../domain/period-deltas.ts";
import { windowDeltas, type WindowDelta, type WindowShare } from "../windows/shares.ts";
import { windowSettlement } from "../windows/slices.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";
import { inPeriodWindow, poolCounterId, type TeamShare } from "./shares.ts";
import type { Countable } from "../domain/totals.ts";
import type { LeaseStore } from "../leases/store.ts";
import { namedLeases, spendsByLease } from "../domain/lease-settlement.ts";

/** What counting teams needs: the teams' own counters and window documents. */
export interface TeamCountDeps {
  teamCounters: Pick<CounterStore, "add" | "released" | "spends">;
  teamWindows: Pick<WindowStore, "add" | "released" | "leasesOf">;
  /** The teams' budget leases (slices of a team's period spend cap and windows held by client replicas: leases/team.ts). */
  leases: { teams: Pick<LeaseStore, "entries">; graceMs: number };
  now(): Date;
}

/** What counting teams wrote, to be released once the job is closed. */
export interface TeamCounted {
  counters: string[];
  windows: string[];
}

/** The events as their teams count them: owner the team, its counter, model and windows. */
type TeamEvent = Attributed & { windows?: WindowShare[]; direct?: true; lease_id?: string | null };

/** What a member's event adds to its team's counters: owner the team, the model as the team plan names it. */
export function teamCountable(e: UsageEventDoc, t: TeamShare): Countable {
  return {
    product_id: e.product_id,
    user_id: t.id,
    model: t.model ?? e.model,
    ...(t.counted_model !== undefined && { counted_model: t.counted_model }),
    total_tokens: e.total_tokens,
    cost_total: e.cost_total,
    tool_call_count: e.tool_call_count,
  };
}

function asTeamEvents(inserted: readonly UsageEventDoc[]): TeamEvent[] {
  const out: TeamEvent[] = [];
  for (const e of inserted) {
    const t = e.team;
    if (!t) continue;
    out.push({
      ...teamCountable(e, t),
      counter_id: t.counter_id,
      period_start: t.period_start,
      period_end: t.period_end,
      timestamp: e.timestamp,
      ...(t.windows && { windows: t.windows }),
      ...(t.credits?.direct && { direct: true as const }),
      // The holder's lease id: its slice of the team's cap, when it holds one, settles in the team counter's update.
      ...(e.lease_id && { lease_id: e.lease_id }),
    });
  }
  return out;
}

/** Adds a job's team shares, each at most once however often this runs. */
export async function countTeams(deps: TeamCountDeps, jobId: string, inserted: readonly UsageEventDoc[]): Promise<TeamCounted> {
  const events = asTeamEvents(inserted);
  if (events.length === 0) return { counters: [], windows: [] };
  const { periods, months } = deltas(events);
  const now = deps.now();
  // The windows within each period go in its counter's update (with what each lease's events
  // added to them, settled against its window slices there); the others to the window document.
  const rest: TeamEvent[] = [];
  const counted = new Map<(typeof periods)[number], WindowDelta>();
  for (const p of periods) {
    const within: TeamEvent[] = [];
    for (const e of p.events) {
      const inside = e.windows?.filter((s) => inPeriodWindow(s, e.period_start, e.period_end)) ?? [];
      within.push({ ...e, windows: inside });
      if (inside.length < (e.windows?.length ?? 0)) rest.push({ ...e, windows: e.windows!.filter((s) => !inside.includes(s)) });
    }
    // One team and period: at most one delta (shares of ended windows left out).
    const [d] = windowDeltas(within, now);
    if (d) {
      p.delta.windows = d.add;
      counted.set(p, d);
    }
  }
  // What each team period's events spent from the slices its counter holds (as for a member's counter, exactly-once/complete.ts).
  await Promise.all(
    periods.map(async (p) => {
      const named = namedLeases(p.events);
      const entries = named.length === 0 ? {} : await deps.leases.teams.entries(p.delta.id, named);
      Object.assign(p.delta, spendsByLease(p.events, entries, now.getTime(), deps.leases.graceMs));
      const d = counted.get(p);
      if (d) p.delta.windowSettle = windowSettlement(d, entries, now.getTime(), deps.leases.graceMs);
    }),
  );
  // The spend the team's pool pays whole (teams/shares.ts poolCounterId): period counters only.
  const pools = deltas(events.filter((e) => e.direct).map((e) => ({ ...e, counter_id: poolCounterId(e.counter_id) }))).periods;
  const counters = [...periods.map((p) => p.delta), ...months, ...pools.map((p) => p.delta)];
  const windows = windowDeltas(rest, now);
  // The other windows' slices live in the team's window document: settled in its own update (as a member's, exactly-once/complete.ts).
  await Promise.all(
    windows.map(async (w) => {
      const named = w.byLease === undefined ? [] : [...w.byLease.keys()];
      w.settle = windowSettlement(w, named.length === 0 ? {} : await deps.teamWindows.leasesOf(w.id, named), now.getTime(), deps.leases.graceMs);
    }),
  );
  await Promise.all([deps.teamCounters.add(jobId, counters, new Set(), now), windows.length === 0 ? undefined : deps.teamWindows.add(jobId, windows, now)]);
  return { counters: counters.map((d) => d.id), windows: windows.map((w) => w.id) };
}

/** The job is closed: its guard entries in the teams' documents may go. */
export function releaseTeams(deps: TeamCountDeps, jobId: string, counted: TeamCounted): void {
  deps.teamCounters.released(jobId, counted.counters);
  deps.teamWindows.released(jobId, counted.windows);
}
