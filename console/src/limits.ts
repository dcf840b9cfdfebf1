// A plan's windows (BUDGETS.md §2) as the console shows and edits them: readable sentences
// ("$0.10 a day", "$2 in any 5 hours"), resets ("in 3 h 20 min"), which dimension blocks, and
// the service's refusal split per limit and field. Pure functions (no DOM), tested in
// test/console-limits.test.ts.
import { gateState, type LimitStatus, type Metric, type PlanLimit as AnsweredLimit, type WindowKind } from "@meter/rules";
import { fmtExactMoney, fmtInt, fmtTokens } from "./format.ts";

/** One entry of a plan's `limits`, as the API answers it (null: not given; a null gate is the plan's). */
export type PlanLimit = Required<AnsweredLimit>;

/**
 * One dimension of a user (`GET /users/{user_id}/limits`, the session view's `limits`): the rules
 * package's shape, with `max` null for no cap and `scope` left out of one built by hand.
 */
export type Dimension = Omit<LimitStatus, "max" | "scope"> & { max: number | null; scope?: string };

const wholeDollars = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", minimumFractionDigits: 0, maximumFractionDigits: 0 });
const cents = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 9 });

/** A cap in dollars as a price is written, exactly: "$2", "$0.10", "$5.50", "$0.00002". */
export const fmtCap = (n: number) => (Number.isInteger(n) ? wholeDollars.format(n) : cents.format(n));

const UNITS: [minutes: number, one: string, many: string][] = [
  [10_080, "week", "weeks"],
  [1_440, "day", "days"],
  [60, "hour", "hours"],
  [1, "minute", "minutes"],
];

/** A rolling window's length in its largest whole unit: "5 hours", "90 minutes", "1 week". */
export function fmtMinutes(minutes: number): string {
  const [size, one, many] = UNITS.find(([size]) => minutes % size === 0) ?? UNITS[3]!;
  const n = minutes / size;
  return n === 1 ? `1 ${one}` : `${fmtInt(n)} ${many}`;
}

const CALENDAR: Record<Exclude<WindowKind, "rolling">, string> = {
  minute: "a minute",
  hour: "an hour",
  day: "a day",
  week: "a week",
  month: "a month",
  period: "a billing period",
};

/** How much of the metric the cap is: "$0.10", "60 requests", "100,000 tokens". */
export function fmtAmount(metric: Metric, n: number): string {
  if (metric === "spend") return fmtCap(n);
  if (metric === "requests") return `${fmtInt(n)} ${n === 1 ? "request" : "requests"}`;
  return `${fmtInt(n)} ${n === 1 ? "token" : "tokens"}`;
}

/** The window as a sentence's end: "a day", "in any 5 hours", "in any hour". */
export function fmtWindow(window: WindowKind | "session", durationMinutes: number | null): string {
  if (window === "session") return "a session";
  if (window === "rolling") return durationMinutes == null ? "in a rolling window" : `in any ${fmtMinutes(durationMinutes)}`.replace("in any 1 ", "in any ");
  return CALENDAR[window];
}

/** A limit as a sentence: "$0.10 a day", "60 requests a minute", "$2 in any 5 hours", "100,000 tokens a day of gpt-4.1". */
export function describeLimit(l: Pick<PlanLimit, "metric" | "max" | "window" | "duration_minutes" | "model">): string {
  return `${fmtAmount(l.metric, l.max)} ${fmtWindow(l.window, l.duration_minutes)}${l.model ? ` of ${l.model}` : ""}`;
}

/** A figure of the metric as the bars show it: dollars, tokens (compact) or calls. */
export const fmtMetric = (metric: Metric): ((n: number) => string) => (metric === "spend" ? fmtExactMoney : metric === "tokens" ? fmtTokens : fmtInt);

/** The prefix of a team plan's dimension (BUDGETS.md §4): team:total_spend, team:limit:<name>. */
export const TEAM_REASON = "team:";

/** Whom a team plan's dimension counts: the team's sum, or each member apart. */
export const scopeText = (d: Pick<Dimension, "scope">) => (d.scope === "member" ? "per member" : "team");

/**
 * A dimension's label on the user's and the team's pages; SPEC's three keep the names the
 * console always gave them. A team plan's says so and whom it counts: "Team · Period spend (team)",
 * "Team · seat: $50 a billing period (per member)".
 */
export function dimensionLabel(d: Dimension): string {
  if (d.reason.startsWith(TEAM_REASON)) return `Team · ${dimensionLabel({ ...d, reason: d.reason.slice(TEAM_REASON.length) })} (${scopeText(d)})`;
  if (d.reason === "total_spend") return "Period spend";
  if (d.reason === "session_spend") return "Session spend (latest session gate)";
  if (d.reason.startsWith("model_limit:")) return `${d.model ?? d.reason.slice("model_limit:".length)} tokens`;
  const name = d.name ?? d.reason.replace(/^limit:/, "");
  return d.max == null ? name : `${name}: ${describeLimit({ ...d, max: d.max, window: d.window === "session" ? "period" : d.window })}`;
}

/** Time until `iso` in the two largest units: "3 h 20 min", "2 d 4 h", "45 min", "under a minute". */
export function fmtUntil(iso: string, now: number): string {
  const ms = Date.parse(iso) - now;
  if (ms < 60_000) return "under a minute";
  const minutes = Math.floor(ms / 60_000);
  const d = Math.floor(minutes / 1_440);
  const h = Math.floor((minutes % 1_440) / 60);
  const m = minutes % 60;
  if (d > 0) return h > 0 ? `${d} d ${h} h` : `${d} d`;
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`;
  return `${m} min`;
}

/**
 * A dimension's reset as the bar says it, or why it has none. A rolling window below its hard
 * gate has no reset to wait for: its resets_at is when its oldest usage stops counting.
 */
export function resetText(d: Dimension, now: number): string {
  if (d.resets_at && Date.parse(d.resets_at) <= now) return "resetting now";
  if (d.resets_at) return `${d.window === "rolling" && !atHardGate(d) ? "oldest usage ages out in" : "resets in"} ${fmtUntil(d.resets_at, now)}`;
  if (d.window === "session") return "counted per session by the client library";
  if (d.max === 0) return "blocks every call; never resets";
  if (d.window === "rolling") return "nothing counted in the window";
  // Prepaid credits with no allowance: the next period brings nothing.
  if (d.credits) return "prepaid: a grant lifts it, not a new period";
  return "no reset";
}

/** Where a dimension stands, as the gates decide it (rules' gateState: money in nano-dollars; a cap of 0 blocks every call); "ok" without a cap. */
export const stateOf = (d: Dimension) => (d.max == null ? "ok" : gateState({ ...d, max: d.max }));

/** At (or past) its hard gate: its calls are blocked. */
export const atHardGate = (d: Dimension) => stateOf(d) === "hard";

/**
 * The dimension that blocks the user's calls (BUDGETS.md §1): of those at the hard gate, the one
 * that allows a call again last (null resets_at = never = latest), then the higher pct, then
 * list order. -1 when none blocks.
 */
export function blockingIndex(dims: readonly Dimension[]): number {
  let best = -1;
  const resets = (d: Dimension) => (d.resets_at == null ? Infinity : Date.parse(d.resets_at));
  for (const [i, d] of dims.entries()) {
    if (!atHardGate(d)) continue;
    if (best === -1) {
      best = i;
      continue;
    }
    const b = dims[best]!;
    if (resets(d) > resets(b) || (resets(d) === resets(b) && d.pct > b.pct)) best = i;
  }
  return best;
}

/** Milliseconds until the earliest reset still ahead (when the bars are stale), or null. */
export function untilNextReset(dims: readonly Dimension[], now: number): number | null {
  let next = Infinity;
  for (const d of dims) if (d.resets_at) next = Math.min(next, Date.parse(d.resets_at) - now);
  return Number.isFinite(next) ? Math.max(0, next) : null;
}

/** The fields of a limit the form edits. */
export const LIMIT_FIELDS = ["name", "metric", "max", "window", "duration_minutes", "model", "soft_gate_at", "hard_gate_at", "scope"] as const;
export type LimitField = (typeof LIMIT_FIELDS)[number];

/** A refusal of a plan, split: per limit (index) and field, the time zone, and the rest. */
export interface LimitProblems {
  rows: Record<number, Partial<Record<LimitField, string>>>;
  time_zone?: string;
  other: string[];
}

/** The service counts limits from 0 (`limits[0]`); the form's rows are "Limit 1", "Limit 2". */
const inRowWords = (message: string) => message.replace(/limits\[(\d+)\]/g, (_, i: string) => `limit ${Number(i) + 1}`);

const add = (to: Partial<Record<string, string>>, key: string, message: string) => {
  const said = inRowWords(message);
  to[key] = to[key] ? `${to[key]}; ${said}` : said;
};

/** A 422 issue's path within the plan it names: `/plans/0/cost_rates/gpt-4o` and `/cost_rates/gpt-4o` (a PATCH) both give `["cost_rates", "gpt-4o"]`. */
export function planIssuePath(path: string): string[] {
  const parts = path.split("/").filter(Boolean);
  return parts[0] === "plans" ? parts.slice(2) : parts;
}

/** Where a 422 issue lands among a plan's limits: a row's field (`/limits/1/max`), the time zone, or neither. */
export function limitIssueAt(path: string): { row: number; field: LimitField } | "time_zone" | undefined {
  const at = planIssuePath(path);
  if (at[0] === "time_zone") return "time_zone";
  if (at[0] !== "limits" || at[1] === undefined || !/^\d+$/.test(at[1]) || !(LIMIT_FIELDS as readonly string[]).includes(at[2] ?? "")) return undefined;
  return { row: Number(at[1]), field: at[2] as LimitField };
}

/**
 * The plans service's 400 (`plans[0].limits[1] ("daily").duration_minutes: only a rolling
 * window takes duration_minutes`, several joined by "; ") and the gateway's 422 issues
 * (`/plans/0/limits/1/max`, `/limits/1/max` on a PATCH), per limit and field.
 */
export function limitProblems(message: string, issues: readonly { path: string; message: string }[]): LimitProblems {
  const out: LimitProblems = { rows: {}, other: [] };
  const row = (i: number) => (out.rows[i] ??= {});
  for (const issue of issues) {
    const at = limitIssueAt(issue.path);
    if (at === "time_zone") out.time_zone = out.time_zone ? `${out.time_zone}; ${issue.message}` : issue.message;
    else if (at) add(row(at.row), at.field, issue.message);
  }
  if (issues.length > 0) return out;
  // Problems start with a field's path; a problem's own text may hold "; " too.
  for (const part of message.split(/; (?=(?:plans\[\d+\]\.)?(?:limits\[\d+\]|limits:|time_zone:|[a-z_]+ must))/)) {
    const m = /^(?:plans\[\d+\]\.)?limits\[(\d+)\] \("(?:[^"\\]|\\.)*"\)\.([a-z_]+): ([\s\S]*)$/.exec(part);
    if (m && (LIMIT_FIELDS as readonly string[]).includes(m[2]!)) add(row(Number(m[1])), m[2]!, m[3]!);
    else if (/^(?:plans\[\d+\]\.)?time_zone: /.test(part)) out.time_zone = part.replace(/^(?:plans\[\d+\]\.)?time_zone: /, "");
    else out.other.push(part);
  }
  return out;
}
