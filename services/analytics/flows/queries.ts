import { create } from "@bufbuild/protobuf";
import { TotalsSchema, type Totals } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { add, pick, zero, type Source } from "../domain/rollup.ts";
import { UserDayBuilder, UserDirectory, WindowUsers, type UserDay } from "../domain/user-columns.ts";
import { TOP_USERS_MAX } from "../domain/windows.ts";
import { versionOf, type DayDoc } from "../store/rollups.ts";
import type { ProductUsers } from "../store/user-day-cache.ts";
import { versionsOf, type TopRow, type WindowAnswerDoc, type WindowKey } from "../store/window-answers.ts";
import type { AnalyticsDeps } from "../deps.ts";
import type { Scope } from "../domain/scopes.ts";

/** Days whose user chunks are read at once by a query (each day's chunks all together). */
const DAYS_AHEAD = 4;

/** What summary and top users need of a window's per-user figures. */
export type WindowUserAnswers = Pick<WindowUsers, "active" | "top">;

/**
 * The rollups of a window's days in one scope (a product, one of its teams, or its teams:
 * domain/scopes.ts) and, when asked for, each row's (user's, or team's) figures (of `source`, or
 * both) summed over them. When the cache holds every day's user columns at the day's current
 * version they are folded from memory; else the window's stored answer is used when it was
 * computed at the very versions just read (store/window-answers.ts), and only failing that
 * are the missing days' chunks read (then cached) and folded. Folds go in the order of
 * `days`, so the figures are the same on every call, whichever way they were found; a fold
 * stores its answer for the next cold read (a process just started, another replica).
 */
export async function readWindow(
  deps: AnalyticsDeps,
  scope: Scope,
  days: readonly string[],
  withUsers: boolean,
  source?: Source,
): Promise<{ docs: DayDoc[]; users: WindowUserAnswers }> {
  const docs = await deps.rollups.readDays(scope, days);
  if (!withUsers) return { docs, users: new WindowUsers(new UserDirectory(), source) };
  const cache = deps.userDays;
  const p = cache.product(scope);
  try {
    const key: WindowKey = { productId: scope, first: days[0] ?? "", last: days.at(-1) ?? "", source };
    const versions = versionsOf(docs);
    const withChunks = docs.filter((d) => d.user_chunks > 0);
    const cold = withChunks.some((d) => !cache.get(p, scope, d.day, versionOf(d)));
    if (cold) {
      const stored = await deps.windowAnswers.read(key);
      if (stored?.versions === versions) {
        deps.answersSeen.note(key, versions);
        return { docs, users: answered(stored) };
      }
    }
    const users = new WindowUsers(p.dir, source);
    const loading: (Promise<UserDay> | undefined)[] = [];
    let next = 0;
    for (let i = 0; i < withChunks.length; i++) {
      for (; next < withChunks.length && next < i + DAYS_AHEAD; next++) {
        const pending = columnsOf(deps, p, scope, withChunks[next]!);
        pending.catch(() => undefined); // awaited in turn below; a failure then fails the query
        loading[next] = pending;
      }
      users.add(await loading[i]!);
      loading[i] = undefined;
    }
    if (deps.answersSeen.stale(key, versions)) {
      // Best effort: an answer not stored costs the next cold read a fold, nothing else.
      await deps.windowAnswers
        .write(key, { versions, active: users.active(), top: users.top(TOP_USERS_MAX).map((u) => [u.userId, u.cost, u.tokens, u.events]) }, deps.now())
        .then(() => deps.answersSeen.note(key, versions))
        .catch((err: unknown) => deps.logger.warn({ err, window: key }, "could not store a window's answer"));
    }
    return { docs, users };
  } finally {
    cache.release(scope, p);
  }
}

/** A stored answer as the fold would give it: the first `limit` of the stored top users are the fold's first `limit`. */
function answered(a: WindowAnswerDoc): WindowUserAnswers {
  const top = JSON.parse(a.top) as TopRow[];
  return {
    active: () => a.active,
    top: (limit) => top.slice(0, limit).map(([userId, cost, tokens, events]) => ({ userId, cost, tokens, events })),
  };
}

async function columnsOf(deps: AnalyticsDeps, p: ProductUsers, scope: Scope, doc: DayDoc): Promise<UserDay> {
  const version = versionOf(doc);
  const hit = deps.userDays.get(p, scope, doc.day, version);
  if (hit) return hit;
  const b = new UserDayBuilder(p.dir);
  await deps.rollups.readUserRows(doc, (id, auto, manual) => b.add(id, auto, manual));
  const columns = b.build();
  deps.userDays.put(p, scope, doc.day, version, columns);
  return columns;
}

/** Cost, tokens and events summed over the days; active users = distinct users with an event. */
export function totalsOf(docs: DayDoc[], users: WindowUserAnswers, source: Source | undefined): Totals {
  const sum = docs.reduce((a, d) => add(a, pick(d.usage, source)), zero());
  return create(TotalsSchema, {
    totalCost: sum[0],
    totalTokens: BigInt(sum[1]),
    totalEvents: BigInt(sum[2]),
    activeUsers: BigInt(users.active()),
  });
}

export function topUsersOf(users: WindowUserAnswers, limit: number) {
  return users.top(limit).map((u) => ({ ...u, tokens: BigInt(u.tokens), events: BigInt(u.events) }));
}
