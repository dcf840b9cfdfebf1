import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";

export { timestampDate, timestampFromDate, type Timestamp };

export function toTimestamp(d: Date): Timestamp {
  return timestampFromDate(d);
}

export function optionalTimestamp(d: Date | null | undefined): Timestamp | undefined {
  return d ? timestampFromDate(d) : undefined;
}

export function fromTimestamp(t: Timestamp | undefined): Date | undefined {
  return t ? timestampDate(t) : undefined;
}

/** One hour in milliseconds. */
export const HOUR_MS = 3_600_000;

/** One UTC day in milliseconds (no leap seconds in Date arithmetic). */
export const DAY_MS = 24 * HOUR_MS;

/**
 * Oldest usage event accepted: stamped on a UTC day at most this many days before today's.
 * Analytics keeps a day's rollup 731 days (today and the 730 before), so every event
 * accepted counts in analytics; an older one would count in usage only.
 */
export const USAGE_EVENT_MAX_AGE_DAYS = 730;

/** How far past the receiver's clock a usage event may be stamped (clocks drift). */
export const USAGE_EVENT_MAX_SKEW_MS = 5 * 60_000;

/**
 * Why a usage event's timestamp is out of bounds as of `now`, or null when it is within
 * them: one rule for the gateway (422) and the ingestion service (INVALID_ARGUMENT).
 */
export function usageTimestampProblem(ts: Date, now: Date): { bound: "too_old" | "future"; message: string } | null {
  const oldest = Math.floor(now.getTime() / DAY_MS) * DAY_MS - USAGE_EVENT_MAX_AGE_DAYS * DAY_MS;
  if (ts.getTime() < oldest) {
    return { bound: "too_old", message: `must be at or after ${new Date(oldest).toISOString()} (at most ${USAGE_EVENT_MAX_AGE_DAYS} days before today, UTC)` };
  }
  if (ts.getTime() > now.getTime() + USAGE_EVENT_MAX_SKEW_MS) {
    return { bound: "future", message: `must not be more than ${USAGE_EVENT_MAX_SKEW_MS / 60_000} minutes in the future` };
  }
  return null;
}
