/** Summary kinds and the UTC window each scheduled run reports on. */
import { calendarMonth } from "@meter/rules";

export const SUMMARY_TYPES = ["daily", "weekly", "monthly"] as const;
export type SummaryType = (typeof SUMMARY_TYPES)[number];

/** Cron (UTC) of each summary: 06:00 daily, Mondays 06:00, the 1st at 06:00. */
export const SUMMARY_CRON: Record<SummaryType, string> = {
  daily: "0 6 * * *",
  weekly: "0 6 * * 1",
  monthly: "0 6 1 * *",
};

const DAY = 86_400_000;

/**
 * The last complete period before `now`: the previous UTC day, the previous Monday-to-Monday
 * week, or the previous calendar month. The end is exclusive.
 */
export function previousPeriod(type: SummaryType, now: Date): { start: Date; end: Date } {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  if (type === "daily") return { start: new Date(today - DAY), end: new Date(today) };
  if (type === "weekly") {
    const sinceMonday = (now.getUTCDay() + 6) % 7;
    const thisMonday = today - sinceMonday * DAY;
    return { start: new Date(thisMonday - 7 * DAY), end: new Date(thisMonday) };
  }
  return calendarMonth(new Date(calendarMonth(now).start.getTime() - 1));
}
