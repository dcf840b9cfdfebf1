import { create } from "@bufbuild/protobuf";
import { TotalsSchema, type Totals } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { add, pick, zero, type Source } from "../domain/rollup.ts";
import { UserDayBuilder, UserDirectory, WindowUsers, type UserDay } from "../domain/user-columns.ts";
import { versionOf, type DayDoc } from "../store/rollups.ts";
import type { ProductUsers } from "../store/user-day-cache.ts";
import type { AnalyticsDeps } from "../deps.ts";

/** Days whose user chunks are read at once by a query (each day's chunks all together). */
const DAYS_AHEAD = 4;

/**
 * The rollups of a window's days and, when asked for, each user's figures (of `source`, or
 * both) summed over them. A day's user columns come from the cache when it holds them at the
 * day's current version, else from its chunks (then cached); either way they are folded in
 * the order of `days`, so the sums are the same on every call.
 */
export async function readWindow(
  deps: AnalyticsDeps,
  productId: string,
  days: readonly string[],
  withUsers: boolean,
  source?: Source,
): Promise<{ docs: DayDoc[]; users: WindowUsers }> {
  const docs = await deps.rollups.readDays(productId, days);
  if (!withUsers) return { docs, users: new WindowUsers(new UserDirectory(), source) };
  const cache = deps.userDays;
  const p = cache.product(productId);
  try {
    const users = new WindowUsers(p.dir, source);
    const withChunks = docs.filter((d) => d.user_chunks > 0);
    const loading: (Promise<UserDay> | undefined)[] = [];
    let next = 0;
    for (let i = 0; i < withChunks.length; i++) {
      for (; next < withChunks.length && next < i + DAYS_AHEAD; next++) {
        const pending = columnsOf(deps, p, withChunks[next]!);
        pending.catch(() => undefined); // awaited in turn below; a failure then fails the query
        loading[next] = pending;
      }
      users.add(await loading[i]!);
      loading[i] = undefined;
    }
    return { docs, users };
  } finally {
    cache.release(productId, p);
  }
}

async function columnsOf(deps: AnalyticsDeps, p: ProductUsers, doc: DayDoc): Promise<UserDay> {
  const version = versionOf(doc);
  const hit = deps.userDays.get(p, doc.product_id, doc.day, version);
  if (hit) return hit;
  const b = new UserDayBuilder(p.dir);
  await deps.rollups.readUserRows(doc, (id, auto, manual) => b.add(id, auto, manual));
  const columns = b.build();
  deps.userDays.put(p, doc.product_id, doc.day, version, columns);
  return columns;
}

/** Cost, tokens and events summed over the days; active users = distinct users with an event. */
export function totalsOf(docs: DayDoc[], users: WindowUsers, source: Source | undefined): Totals {
  const sum = docs.reduce((a, d) => add(a, pick(d.usage, source)), zero());
  return create(TotalsSchema, {
    totalCost: sum[0],
    totalTokens: BigInt(sum[1]),
    totalEvents: BigInt(sum[2]),
    activeUsers: BigInt(users.active()),
  });
}

export function topUsersOf(users: WindowUsers, limit: number) {
  return users.top(limit).map((u) => ({ ...u, tokens: BigInt(u.tokens), events: BigInt(u.events) }));
}
