// A plan's `limits` and `time_zone` (BUDGETS.md §2): defaults and validation. Pure functions, no I/O.
import { characters } from "@meter/lib/characters";
import { LIMIT_SCOPES, type PlanLimit } from "@meter/lib/plan-limits";
import { BELOW_UNIT, MAX_PLAN_DOLLARS, MAX_ROLLING_MINUTES, METRICS, WINDOWS, belowUnit, isTimeZone } from "@meter/rules";

export type { PlanLimit };

/** What a plan without windows has: it reads and behaves as a plan did before windows. */
export const WINDOW_DEFAULTS: Readonly<{ limits: PlanLimit[]; time_zone: string }> = Object.freeze({ limits: [], time_zone: "UTC" });

export const WINDOW_LIMITS = { limitsPerPlan: 16, nameLength: 64, modelLength: 256 } as const;

const NAME = /^[a-z0-9_-]+$/;

/**
 * Every problem with a plan's limits and time zone, each naming the limit and the field, e.g.
 * `limits[1] ("daily").duration_minutes: only a rolling window takes duration_minutes`.
 * `gates` are the plan's own thresholds, which a limit without its own uses.
 */
export function limitProblems(
  v: { limits: readonly PlanLimit[]; time_zone: string; soft_gate_at: number; hard_gate_at: number },
  prefix = "",
): string[] {
  const problems: string[] = [];
  if (!isTimeZone(v.time_zone)) {
    problems.push(`${prefix}time_zone: "${v.time_zone.slice(0, 64)}" is not an IANA time zone name (e.g. "America/New_York", "UTC")`);
  }
  if (v.limits.length > WINDOW_LIMITS.limitsPerPlan) {
    problems.push(`${prefix}limits: at most ${WINDOW_LIMITS.limitsPerPlan} per plan (${v.limits.length} sent)`);
  }
  const seen = new Map<string, number>();
  // Past the cap, the entries beyond it are not looked at: the answer says how many were sent.
  for (const [i, l] of v.limits.slice(0, WINDOW_LIMITS.limitsPerPlan).entries()) {
    const at = (field: string) => `${prefix}limits[${i}] (${JSON.stringify(l.name.slice(0, WINDOW_LIMITS.nameLength))}).${field}`;
    if (l.name.length === 0 || l.name.length > WINDOW_LIMITS.nameLength || !NAME.test(l.name)) {
      problems.push(`${at("name")}: must be 1-${WINDOW_LIMITS.nameLength} characters of a-z, 0-9, _ and -`);
    } else if (seen.has(l.name)) {
      problems.push(`${at("name")}: duplicate of limits[${seen.get(l.name)}]; names are unique in a plan`);
    } else seen.set(l.name, i);
    const metricKnown = (METRICS as readonly string[]).includes(l.metric);
    if (!metricKnown) problems.push(`${at("metric")}: "${String(l.metric).slice(0, 64)}" is not one of ${METRICS.join(", ")}`);
    if (!(WINDOWS as readonly string[]).includes(l.window)) {
      problems.push(`${at("window")}: "${String(l.window).slice(0, 64)}" is not one of ${WINDOWS.join(", ")}`);
    }
    if (!(Number.isFinite(l.max) && l.max >= 0)) problems.push(`${at("max")}: must be a non-negative number`);
    else if (l.metric === "spend" && l.max > MAX_PLAN_DOLLARS) problems.push(`${at("max")}: must be at most ${MAX_PLAN_DOLLARS.toLocaleString("en-US")} dollars`);
    else if (l.metric === "spend" && belowUnit(l.max)) problems.push(`${at("max")}: ${BELOW_UNIT}`);
    else if (metricKnown && l.metric !== "spend" && !Number.isSafeInteger(l.max)) {
      problems.push(`${at("max")}: must be a whole number for ${l.metric}`);
    }
    if (l.window === "rolling") {
      const d = l.duration_minutes;
      if (d === null) problems.push(`${at("duration_minutes")}: a rolling window needs duration_minutes (1-${MAX_ROLLING_MINUTES})`);
      else if (!(Number.isInteger(d) && d >= 1 && d <= MAX_ROLLING_MINUTES)) {
        problems.push(`${at("duration_minutes")}: must be a whole number of minutes, 1-${MAX_ROLLING_MINUTES}`);
      }
    } else if (l.duration_minutes !== null) {
      problems.push(`${at("duration_minutes")}: only a rolling window takes duration_minutes`);
    }
    if (l.model !== null && (l.model.length === 0 || characters(l.model) > WINDOW_LIMITS.modelLength)) {
      problems.push(`${at("model")}: must be 1-${WINDOW_LIMITS.modelLength} characters, or null for every model`);
    }
    for (const f of ["soft_gate_at", "hard_gate_at"] as const) {
      const x = l[f];
      if (x !== null && !(Number.isFinite(x) && x >= 0 && x <= 1)) problems.push(`${at(f)}: must be between 0 and 1`);
    }
    if (l.scope != null && !(LIMIT_SCOPES as readonly string[]).includes(l.scope)) {
      problems.push(`${at("scope")}: "${String(l.scope).slice(0, 64)}" is not one of ${LIMIT_SCOPES.join(", ")} (unset: team)`);
    }
    const soft = l.soft_gate_at ?? v.soft_gate_at;
    const hard = l.hard_gate_at ?? v.hard_gate_at;
    if ((l.soft_gate_at !== null || l.hard_gate_at !== null) && soft > hard) problems.push(`${at("soft_gate_at")}: ${soft} must not exceed hard_gate_at (${hard})`);
  }
  return problems;
}
