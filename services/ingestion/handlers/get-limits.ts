import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import type { IngestionDeps } from "../deps.ts";
import { attribute, attributeTeam } from "../domain/attribution.ts";
import { hasScope, ownCapWithPool, readTeam, teamLimits } from "../teams/view.ts";
import { catchUp } from "../late-changes/follow.ts";
import { dimensions } from "../windows/dimensions.ts";
import { uncreditedOf } from "../store/counters.ts";
import { windowDocId } from "../windows/shares.ts";
import { requireUser } from "./common.ts";
import { readGuessed } from "../windows/with-counter.ts";
import { creditsInForce } from "../credits/view.ts";

/**
 * Every dimension of a user with its usage now, as the session view's `limits` carries it, for
 * a product's server that checks a user without the client library: the plans lookup, then the
 * period counter, the window document and the team's documents read together.
 */
export function getLimits(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["getLimits"] {
  return async (req) => {
    const productId = req.productId;
    const user = await requireUser(deps, productId, req.userId);
    await catchUp(deps, productId, req.userId, user);
    const now = deps.now();
    const a = attribute(productId, req.userId, user, now);
    const ta = attributeTeam(productId, user, now);
    const windowed = (a.plan && a.plan.limits.length > 0) || hasScope(ta, "member");
    const [{ counter, windows }, credits, team] = await Promise.all([
      readGuessed(deps, a.counterId, windowed ? windowDocId(productId, req.userId) : null),
      creditsInForce(deps.credits, productId, req.userId, a.plan, a.period.start, now),
      readTeam(deps, productId, ta, now),
    ]);
    return { userId: req.userId, limits: [...dimensions(a.plan, a.period, counter, windows, now, ownCapWithPool(credits?.cap?.(uncreditedOf(counter)), team)), ...teamLimits(team, windows, now)] };
  };
}
