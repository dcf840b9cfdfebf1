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

/** One UTC day in milliseconds (no leap seconds in Date arithmetic). */
export const DAY_MS = 86_400_000;
