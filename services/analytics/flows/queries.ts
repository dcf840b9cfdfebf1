import { create } from "@bufbuild/protobuf";
import { TotalsSchema, type Totals } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { add, pick, topUsers, zero, type Figures, type Source } from "../domain/rollup.ts";
import type { DayDoc } from "../store/rollups.ts";
import type { AnalyticsDeps } from "../deps.ts";

/**
 * The rollups of a window's days and, when asked for, each user's figures (of `source`, or
 * both) summed over them. User chunks are folded one at a time, so memory follows the
 * window's distinct users, not days x users.
 */
export async function readWindow(
  deps: AnalyticsDeps,
  productId: string,
  days: readonly string[],
  withUsers: boolean,
  source?: Source,
): Promise<{ docs: DayDoc[]; users: Map<string, Figures> }> {
  const docs = await deps.rollups.readDays(productId, days);
  const users = new Map<string, Figures>();
  if (withUsers) {
    await deps.rollups.foldUsers(docs, (u) => {
      const f = pick(u.figures, source);
      if (f[0] === 0 && f[1] === 0 && f[2] === 0) return;
      users.set(u.id, add(users.get(u.id) ?? zero(), f));
    });
  }
  return { docs, users };
}

/** Cost, tokens and events summed over the days; active users = distinct users with an event. */
export function totalsOf(docs: DayDoc[], users: Map<string, Figures>, source: Source | undefined): Totals {
  const sum = docs.reduce((a, d) => add(a, pick(d.usage, source)), zero());
  return create(TotalsSchema, {
    totalCost: sum[0],
    totalTokens: BigInt(sum[1]),
    totalEvents: BigInt(sum[2]),
    activeUsers: BigInt([...users.values()].filter((f) => f[2] > 0).length),
  });
}

export function topUsersOf(users: Map<string, Figures>, limit: number) {
  return topUsers(users, limit).map((u) => ({ ...u, tokens: BigInt(u.tokens), events: BigInt(u.events) }));
}
