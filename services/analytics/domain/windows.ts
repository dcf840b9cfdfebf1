/**
 * UTC calendar arithmetic for the analytics windows. Every window is a whole number of UTC
 * days [start, end); a day is named by its date, "YYYY-MM-DD".
 */

import { DAY_MS } from "@meter/lib/time";

export { DAY_MS };

export const DAYS_DEFAULT = 30;
export const DAYS_MIN = 1;
export const DAYS_MAX = 365;
export const TOP_USERS_DEFAULT = 10;
export const TOP_USERS_MAX = 100;
/** Longest explicit window GetWindowReport accepts. */
export const REPORT_MAX_DAYS = 366;

export interface DayWindow {
  /** 00:00 UTC of the first day. */
  start: Date;
  /** 00:00 UTC of the day after the last one (exclusive). */
  end: Date;
  /** Every day of the window, oldest first. */
  days: string[];
}

export function dayOf(d: Date): string {
  return d.toISOString().slice(0, 10);
}

export function startOfDay(d: Date): Date {
  return new Date(Math.floor(d.getTime() / DAY_MS) * DAY_MS);
}

function daysBetween(start: Date, end: Date): string[] {
  const out: string[] = [];
  for (let t = start.getTime(); t < end.getTime(); t += DAY_MS) out.push(dayOf(new Date(t)));
  return out;
}

/** The last `days` UTC calendar days including today: [00:00 of today - days + 1, 00:00 of tomorrow). */
export function lookback(now: Date, days: number): DayWindow {
  const end = new Date(startOfDay(now).getTime() + DAY_MS);
  const start = new Date(end.getTime() - days * DAY_MS);
  return { start, end, days: daysBetween(start, end) };
}

/** The window of the same length immediately before `w`. */
export function previous(w: DayWindow): DayWindow {
  const start = new Date(w.start.getTime() - (w.end.getTime() - w.start.getTime()));
  return { start, end: w.start, days: daysBetween(start, w.start) };
}

/** An explicit [start, end) widened to whole UTC days: from the day holding start to the day holding end - 1 ms. */
export function coveringDays(start: Date, end: Date): DayWindow {
  const s = startOfDay(start);
  const e = new Date(startOfDay(new Date(end.getTime() - 1)).getTime() + DAY_MS);
  return { start: s, end: e, days: daysBetween(s, e) };
}
