import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import { toTimestamp } from "@meter/lib/time";
import { toDollars } from "@meter/rules";
import type { IngestionDeps } from "../deps.ts";
import pMap from "p-map";
import { catchUp } from "../late-changes/follow.ts";
import { attribute } from "../domain/attribution.ts";

/** Users per call: a listing page is at most 200; the plans service resolves 1,000 at once. */
export const MAX_SPEND_USERS = 1_000;

/**
 * The current period's spend of a page of users, as GetUsage's current_period reads it for
 * one: one ResolveUsers call for all of them, late subscription changes caught up, then one
 * read of their counters by `_id` list. No call per user.
 */
export function getPeriodSpends(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["getPeriodSpends"] {
  return async (req) => {
    const productId = req.productId;
    const ids = [...new Set(req.userIds)];
    if (ids.length > MAX_SPEND_USERS) throw rpcError.invalid(`at most ${MAX_SPEND_USERS} user_ids per call`);
    if (ids.length === 0) return { spends: [] };
    const users = await deps.users.resolve(productId, ids);
    // A read: a change this process has not applied yet is applied first, as GetUsage does
    // (a no-op for every user whose change is applied already).
    await pMap(users, ([id, user]) => catchUp(deps, productId, id, user), { concurrency: 8 });
    const now = deps.now();
    const known = ids.flatMap((id) => {
      const user = users.get(id);
      return user ? [{ id, a: attribute(productId, id, user, now) }] : [];
    });
    const counters = await deps.counters.getMany(known.map((k) => k.a.counterId));
    return {
      spends: known.map(({ id, a }) => {
        const c = counters.get(a.counterId);
        return {
          userId: id,
          cost: toDollars(c?.cost ?? 0),
          totalTokens: BigInt(c?.tokens ?? 0),
          periodStart: toTimestamp(a.period.start),
          periodEnd: toTimestamp(a.period.end),
        };
      }),
    };
  };
}
