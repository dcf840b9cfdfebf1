/**
 * The dimension list of a user (BUDGETS.md §1-2, the session view's `limits` and
 * GET /users/{user_id}/limits): SPEC's three when the plan has them, then one per entry of the
 * plan's `limits`, each with its usage now; then its team plan's (BUDGETS.md §4, teamDimensions).
 * Pure: built from the period counters and the window documents already read.
 */
import { create } from "@bufbuild/protobuf";
import { DimensionSchema, type Dimension } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { own } from "@meter/lib/own";
import { toTimestamp } from "@meter/lib/time";
import { bucketCounts, dimensionKey, hardMarkOf, ratio, rollingResetsAt, toDollars, toNano, type Bucket } from "@meter/rules";
import type { PlanInfo } from "../adapters/plans.ts";
import { encodeKey } from "../domain/field-keys.ts";
import type { Totals } from "../domain/totals.ts";
import { windowAt, windowField, type WindowLimit } from "./shares.ts";
import { memberPrefix, scopeOf } from "../teams/shares.ts";
import type { WindowDoc } from "./store.ts";

const pct = (used: number, max: number) => (max > 0 ? ratio(used, max) : 1);

/** Bounds of the current billing period. */
interface Period {
  start: Date;
  end: Date;
}

/** What credits add to the period spend cap (credits/view.ts), when the plan has them enabled. */
export interface CreditCap {
  /** allowance + drawn in the period + balance, nano-dollars. */
  capNano: number;
  balanceNano: number;
  lowAt: number | undefined;
}

export function dimensions(plan: PlanInfo | null, period: Period, counter: Totals | null, windows: WindowDoc | null, now: Date, credits?: CreditCap | null): Dimension[] {
  if (!plan) return [];
  const out = periodDimensions(plan, period, counter, { prefix: "", scope: "user", credits });
  for (const l of plan.limits) out.push(limitDimension(l, plan, period, { doc: windows, key: "", prefix: "", scope: "user" }, now));
  return out;
}

/** Where a team's dimensions read their windows: the team's window document, and the member's (member-scope limits). */
export interface TeamWindows {
  /** Service team id (member-scope fields are prefixed with it: teams/shares.ts). */
  teamId: string;
  team: WindowDoc | null;
  /** Null for the team's own view (GetTeamLimits): member-scope limits are then left out. */
  member: WindowDoc | null | "none";
}

/**
 * A team plan's dimensions (BUDGETS.md §4), reasons prefixed `team:`: total_spend and each model
 * limit over the team's period counter (scope "team"), then each entry of its `limits`, over the
 * team's window document (scope "team") or the member's own fields (scope "member"). The team
 * plan's session cap is not one (sessions belong to users). With the team plan's credits, the
 * team's pool extends `team:total_spend` as a user's balance extends `total_spend`.
 */
export function teamDimensions(plan: PlanInfo, period: Period, counter: Totals | null, windows: TeamWindows, now: Date, credits?: CreditCap | null): Dimension[] {
  const out = periodDimensions(plan, period, counter, { prefix: TEAM_REASON, scope: "team", session: false, credits });
  for (const l of plan.limits) {
    const scope = scopeOf(l);
    if (scope === "member" && windows.member === "none") continue;
    const source = scope === "team" ? { doc: windows.team, key: "" } : { doc: windows.member as WindowDoc | null, key: memberPrefix(windows.teamId) };
    out.push(limitDimension(l, plan, period, { ...source, prefix: TEAM_REASON, scope }, now));
  }
  return out;
}

/** The prefix of a team dimension's reason (and gate_reason). */
export const TEAM_REASON = "team:";

interface Labels {
  prefix: string;
  scope: string;
  /** The session cap is a dimension (users only). */
  session?: boolean;
  credits?: CreditCap | null;
}

/** SPEC's three over a period counter: total_spend, session_spend, model_limit:<model>. */
function periodDimensions(plan: PlanInfo, period: Period, counter: Totals | null, labels: Labels): Dimension[] {
  const out: Dimension[] = [];
  const { prefix, scope, credits } = labels;
  const gates = { softGateAt: plan.softGateAt, hardGateAt: plan.hardGateAt };
  const periodBounds = (max: number) => ({ windowStart: toTimestamp(period.start), resetsAt: max > 0 ? toTimestamp(period.end) : undefined });
  if (plan.maxSpendPerPeriod !== undefined) {
    // With credits the balance extends the cap (BUDGETS.md §3) and the dimension says so.
    const max = credits ? toDollars(credits.capNano) : plan.maxSpendPerPeriod;
    const used = toDollars(counter?.cost ?? 0);
    const extra = credits ? { credits: { balance: toDollars(credits.balanceNano), lowAt: credits.lowAt } } : {};
    // Prepaid credits with no allowance: a new period lifts nothing (only a grant does), so no reset.
    const bounds = periodBounds(credits && plan.maxSpendPerPeriod === 0 ? 0 : max);
    out.push(create(DimensionSchema, { reason: `${prefix}total_spend`, metric: "spend", window: "period", scope, max, used, pct: pct(used, max), ...gates, ...bounds, ...extra }));
  }
  if (plan.maxSpendPerSession !== undefined && labels.session !== false) {
    const max = plan.maxSpendPerSession;
    out.push(create(DimensionSchema, { reason: `${prefix}session_spend`, metric: "spend", window: "session", scope, max, used: 0, pct: max > 0 ? 0 : 1, ...gates }));
  }
  for (const [model, l] of Object.entries(plan.modelLimits)) {
    const max = l.maxTokensPerPeriod;
    // A model may be named like an Object property ("constructor").
    const used = own(counter?.tokens_by_model, encodeKey(model)) ?? 0;
    out.push(create(DimensionSchema, { reason: `${prefix}model_limit:${model}`, metric: "tokens", window: "period", model, scope, max, used, pct: pct(used, max), ...gates, ...periodBounds(max) }));
  }
  return out;
}

/** Amounts are kept in nano-dollars for spend; answers are in dollars. */
const unit = (l: WindowLimit, n: number) => (l.metric === "spend" ? toDollars(n) : n);

/** Where a limit's counts are read: a window document, its fields prefixed with `key`, and the dimension's labels. */
interface LimitSource {
  doc: WindowDoc | null;
  key: string;
  prefix: string;
  scope: string;
}

function limitDimension(l: WindowLimit, plan: PlanInfo, period: Period, source: LimitSource, now: Date): Dimension {
  const windows = source.doc;
  const soft = l.soft_gate_at ?? plan.softGateAt;
  const hard = l.hard_gate_at ?? plan.hardGateAt;
  const dimension = dimensionKey({ metric: l.metric, window: l.window, duration_minutes: l.duration_minutes, model: l.model });
  const base = {
    reason: `${source.prefix}limit:${l.name}`,
    name: l.name,
    metric: l.metric,
    window: l.window,
    durationMinutes: l.duration_minutes ?? undefined,
    model: l.model ?? undefined,
    scope: source.scope,
    max: l.max,
    softGateAt: soft,
    hardGateAt: hard,
  };
  const t = now.getTime();
  if (l.window === "rolling") {
    const duration = l.duration_minutes ?? 1;
    const prefix = `${source.key}${encodeKey(dimension)}|`;
    const buckets: Bucket[] = [];
    for (const [k, v] of Object.entries(windows?.w ?? {})) {
      if (!k.startsWith(prefix)) continue;
      const b = { start: Number(k.slice(prefix.length)), used: Number(v.n) };
      if (bucketCounts(b, duration, t)) buckets.push(b);
    }
    buckets.sort((a, b) => a.start - b.start);
    const usedN = buckets.reduce((s, b) => s + b.used, 0);
    const maxN = l.metric === "spend" ? toNano(l.max) : l.max;
    const resets = rollingResetsAt(buckets, duration, maxN * hard, t);
    const used = unit(l, usedN);
    return create(DimensionSchema, {
      ...base,
      used,
      pct: pct(used, l.max),
      resetsAt: resets === null ? undefined : toTimestamp(new Date(resets)),
      buckets: buckets.map((b) => ({ start: toTimestamp(new Date(b.start)), used: unit(l, b.used) })),
    });
  }
  const w = windowAt(l, t, plan.timeZone, period);
  const used = unit(l, Number(own(windows?.w, source.key + windowField(dimension, w.start))?.n ?? 0));
  return create(DimensionSchema, {
    ...base,
    used,
    pct: pct(used, l.max),
    windowStart: toTimestamp(new Date(w.start)),
    // A hard gate at 0 (or a cap of 0) blocks for good: no reset.
    resetsAt: hardMarkOf(l, plan.hardGateAt) > 0 ? toTimestamp(new Date(w.end)) : undefined,
  });
}
