/**
 * Budget windows (BUDGETS.md §2): which window of a plan's `limits` entry a time falls in, and
 * what a rolling window holds. Calendar windows are counted in the plan's IANA time zone
 * (weeks start on Monday; a day across a daylight-saving change is 23 or 25 hours long);
 * a rolling window of N minutes is kept as buckets of N seconds (1/60 of it), so its usage is
 * exact to one bucket. Times are epoch milliseconds; windows are [start, end).
 */

export const CALENDAR_WINDOWS = ["minute", "hour", "day", "week", "month"] as const;
export type CalendarWindow = (typeof CALENDAR_WINDOWS)[number];
export const WINDOWS = [...CALENDAR_WINDOWS, "period", "rolling"] as const;
export type WindowKind = (typeof WINDOWS)[number];
export const METRICS = ["spend", "tokens", "requests"] as const;
export type Metric = (typeof METRICS)[number];

/** Longest rolling window: 31 days. */
export const MAX_ROLLING_MINUTES = 44_640;

export interface Span {
  start: number;
  end: number;
}

const DAY_MS = 86_400_000;

/** Formatters by the time zone names plans hold; bounded, as names come from outside. */
const formats = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATS = 1_000;

function newFormat(timeZone: string): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  });
}

function format(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (f === undefined) {
    f = newFormat(timeZone);
    if (formats.size >= MAX_FORMATS) formats.clear();
    formats.set(timeZone, f);
  }
  return f;
}

/**
 * The name a plan keeps for a time zone this runtime knows (IANA names; "UTC"), else null: as
 * sent, but in the database's letter case ("america/new_york" is "America/New_York"), since the
 * runtimes of the client libraries (Python's zoneinfo) know names only in that case. Aliases
 * ("US/Eastern") stay as sent. Checked with a formatter of its own: nothing is kept per name sent.
 */
export function timeZoneName(name: string): string | null {
  if (typeof name !== "string" || name === "" || name.length > 64) return null;
  try {
    const resolved = newFormat(name).resolvedOptions().timeZone;
    return resolved.toLowerCase() === name.toLowerCase() ? resolved : name;
  } catch {
    return null;
  }
}

/** True for a time zone name this runtime knows (IANA names; "UTC"). */
export function isTimeZone(name: string): boolean {
  return timeZoneName(name) !== null;
}

/** The wall clock of `t` in `timeZone`, as the UTC instant with the same fields (whole seconds). */
function wallOf(timeZone: string, t: number): number {
  let y = 0;
  let mo = 0;
  let d = 0;
  let h = 0;
  let mi = 0;
  let s = 0;
  for (const p of format(timeZone).formatToParts(t)) {
    if (p.type === "year") y = Number(p.value);
    else if (p.type === "month") mo = Number(p.value);
    else if (p.type === "day") d = Number(p.value);
    else if (p.type === "hour") h = Number(p.value);
    else if (p.type === "minute") mi = Number(p.value);
    else if (p.type === "second") s = Number(p.value);
  }
  return Date.UTC(y, mo - 1, d, h, mi, s);
}

/** Offset of `timeZone` from UTC at `t`, in ms (wall clock minus UTC). */
function offsetAt(timeZone: string, t: number): number {
  return wallOf(timeZone, t) - Math.floor(t / 1000) * 1000;
}

/**
 * The instant a wall clock time names in `timeZone` (wall given as the UTC instant with the
 * same fields). A time that occurs twice (clocks set back) is the earlier one; a time that
 * does not occur (clocks set forward) is read with the offset before the change, i.e. it
 * lands as far after the gap's start as it names past it: midnight skipped by a change at
 * 00:00 is 01:00. This is what Python's zoneinfo does with fold=0.
 */
export function fromWall(timeZone: string, wall: number): number {
  const before = offsetAt(timeZone, wall - DAY_MS);
  const after = offsetAt(timeZone, wall + DAY_MS);
  const early = wall - Math.max(before, after);
  const late = wall - Math.min(before, after);
  const earlyValid = offsetAt(timeZone, early) === wall - early;
  if (earlyValid) return early;
  const lateValid = offsetAt(timeZone, late) === wall - late;
  if (lateValid) return late;
  return wall - before;
}

/** The start of the calendar window holding `wall`, on the wall clock (UTC fields). */
function wallStart(kind: CalendarWindow, wall: number): number {
  const d = new Date(wall);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = d.getUTCDate();
  switch (kind) {
    case "minute":
      return Date.UTC(y, m, day, d.getUTCHours(), d.getUTCMinutes());
    case "hour":
      return Date.UTC(y, m, day, d.getUTCHours());
    case "day":
      return Date.UTC(y, m, day);
    case "week":
      // getUTCDay: 0 is Sunday; weeks start on Monday.
      return Date.UTC(y, m, day - ((d.getUTCDay() + 6) % 7));
    case "month":
      return Date.UTC(y, m, 1);
  }
}

// The length of a calendar window on the wall clock, where no day is longer than another (a month's varies).
const WALL_LENGTH_MS = { minute: 60_000, hour: 3_600_000, day: DAY_MS, week: 7 * DAY_MS } as const;

/** The wall clock start of the window after the one starting at `start` (a wall clock time). */
function wallNext(kind: CalendarWindow, start: number): number {
  if (kind !== "month") return start + WALL_LENGTH_MS[kind];
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

// The last window computed per (zone, kind): most times asked fall in the current one.
const lastWindow = new Map<string, Span>();

/**
 * The calendar window of `kind` in `timeZone` that holds `t`. A window's end is the next
 * one's start, so consecutive windows tile time even across daylight-saving changes.
 */
export function calendarWindow(kind: CalendarWindow, t: number, timeZone: string): Span {
  const key = `${timeZone}\n${kind}`;
  const last = lastWindow.get(key);
  if (last !== undefined && last.start <= t && t < last.end) return last;
  let span: Span;
  if (kind === "minute") {
    // Every offset in use is whole minutes: no zone lookup needed.
    const start = Math.floor(t / 60_000) * 60_000;
    span = { start, end: start + 60_000 };
  } else if (kind === "hour") {
    // An hour is 60 elapsed minutes from a mark of the local clock at `t` (:00, or :30 in a
    // zone half an hour off), also within the hour that a change back to winter time repeats.
    const local = t + offsetAt(timeZone, t);
    const start = t - (((local % 3_600_000) + 3_600_000) % 3_600_000);
    span = { start, end: start + 3_600_000 };
  } else {
    const ws = wallStart(kind, wallOf(timeZone, t));
    span = { start: fromWall(timeZone, ws), end: fromWall(timeZone, wallNext(kind, ws)) };
  }
  lastWindow.set(key, span);
  if (lastWindow.size > 1_000) lastWindow.clear();
  return span;
}

/** Bucket width of a rolling window of `durationMinutes`: 1/60 of it (N minutes, N seconds). */
export function bucketMs(durationMinutes: number): number {
  return durationMinutes * 1000;
}

/** The bucket of a rolling window that holds `t`. */
export function rollingBucket(durationMinutes: number, t: number): Span {
  const w = bucketMs(durationMinutes);
  const start = Math.floor(t / w) * w;
  return { start, end: start + w };
}

/** One bucket of a rolling window: its start (epoch ms) and what it counted (nano-dollars, tokens or requests). */
export interface Bucket {
  start: number;
  used: number;
}

/**
 * Whether a bucket still counts at `now`: it counts while any part of it lies within the
 * last `durationMinutes` (so a window counts up to one bucket more than the exact sum).
 */
export function bucketCounts(b: Bucket, durationMinutes: number, now: number): boolean {
  return b.start + bucketMs(durationMinutes) > now - durationMinutes * 60_000;
}

/** When a bucket stops counting. */
export function bucketExpiresAt(b: Bucket, durationMinutes: number): number {
  return b.start + bucketMs(durationMinutes) + durationMinutes * 60_000;
}

/** Usage of a rolling window at `now`: the sum of the buckets that still count (spend in nano-dollars, so sums are exact). */
export function rollingUsed(buckets: readonly Bucket[], durationMinutes: number, now: number): number {
  let used = 0;
  for (const b of buckets) if (bucketCounts(b, durationMinutes, now)) used += b.used;
  return used;
}

/**
 * When a rolling window's usage falls below `hardMark` if no further call is made (blocked),
 * or, when it is already below, when its oldest counted usage ages out; null when nothing
 * counts, or when `hardMark` is 0 (a limit of 0 never lets a call through).
 * Spend in nano-dollars, as in rollingUsed.
 */
export function rollingResetsAt(buckets: readonly Bucket[], durationMinutes: number, hardMark: number, now: number): number | null {
  if (hardMark <= 0) return null;
  const live = buckets.filter((b) => bucketCounts(b, durationMinutes, now) && b.used > 0).sort((a, b) => a.start - b.start);
  if (live.length === 0) return null;
  let used = live.reduce((s, b) => s + b.used, 0);
  if (used < hardMark) return bucketExpiresAt(live[0]!, durationMinutes);
  for (const b of live) {
    used -= b.used;
    if (used < hardMark) return bucketExpiresAt(b, durationMinutes);
  }
  return bucketExpiresAt(live[live.length - 1]!, durationMinutes);
}

/**
 * A limit's key for counting: what it counts, over which window, for which model. Two limits
 * with the same key count the same thing (and share counters); a renamed limit keeps its usage.
 */
export function dimensionKey(l: { metric: Metric; window: WindowKind; duration_minutes?: number | null; model?: string | null }): string {
  return `${l.metric}:${l.window}:${l.window === "rolling" ? (l.duration_minutes ?? 0) : ""}:${l.model ?? ""}`;
}
