import { create } from "@bufbuild/protobuf";
import { TotalsSchema, type Totals } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { add, pick, sumByKey, topUsers, zero, type Source, type UserFigures } from "./rollup.ts";
import type { DayDoc } from "./store/rollups.ts";
import type { AnalyticsDeps } from "./deps.ts";

/** The rollups of a window's days, and of its users when asked for. */
export async function readWindow(
  deps: AnalyticsDeps,
  productId: string,
  days: readonly string[],
  withUsers: boolean,
): Promise<{ docs: DayDoc[]; users: UserFigures[] }> {
  const docs = await deps.rollups.readDays(productId, days);
  return { docs, users: withUsers ? await deps.rollups.readUsers(docs) : [] };
}

export function userTotals(users: UserFigures[], source: Source | undefined) {
  return sumByKey(users, (u) => u.id, (u) => u.figures, source);
}

/** Cost, tokens and events summed over the days; active users = distinct users with an event. */
export function totalsOf(docs: DayDoc[], users: UserFigures[], source: Source | undefined): Totals {
  const sum = docs.reduce((a, d) => add(a, pick(d.usage, source)), zero());
  return create(TotalsSchema, {
    totalCost: sum[0],
    totalTokens: BigInt(sum[1]),
    totalEvents: BigInt(sum[2]),
    activeUsers: BigInt([...userTotals(users, source).values()].filter((f) => f[2] > 0).length),
  });
}

export function topUsersOf(users: UserFigures[], source: Source | undefined, limit: number) {
  return topUsers(userTotals(users, source), limit).map((u) => ({ ...u, tokens: BigInt(u.tokens), events: BigInt(u.events) }));
}
