import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import type { IngestionDeps } from "../deps.ts";
import { attribute } from "../domain/attribution.ts";
import { requireUser } from "./common.ts";
import { normalizeModel, toNano } from "@meter/rules";
import { encodeKey } from "../domain/field-keys.ts";
import { releasedWindows, userWindowHome } from "../windows/lease-request.ts";
import { windowDocId } from "../windows/shares.ts";
import { releaseTeamSlice, releasedMemberWindows } from "../leases/team.ts";
import { leaseMessage, requireDollars, requireLeaseId, requireTokens } from "../leases/request.ts";

/** Models one release may name (a lease holds tokens of the capped models a replica called). */
const MAX_RELEASED_MODELS = 256;

/**
 * Gives back the unused part of a lease of the current period: the lease keeps exactly what
 * its holder says it used, so usage events still on their way settle it to zero outstanding,
 * whichever arrives first.
 */
export function releaseLease(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["releaseLease"] {
  return async (req) => {
    const productId = req.productId;
    const holder = requireLeaseId("lease_id", req.leaseId);
    const used = requireDollars("used", req.used);
    const models = Object.entries(req.usedTokens);
    if (models.length > MAX_RELEASED_MODELS) throw rpcError.invalid(`used_tokens may name at most ${MAX_RELEASED_MODELS} models`);
    const user = await requireUser(deps, productId, req.userId);
    const a = attribute(productId, req.userId, user, deps.now());
    const usedTokens: Record<string, number> = {};
    for (const [model, n] of models) {
      if (model.length < 1 || model.length > 255) throw rpcError.invalid("used_tokens keys must be model names of 1-255 characters");
      const name = normalizeModel(model, a.plan?.pricing ?? null);
      const tokens = requireTokens(`used_tokens.${model}`, n);
      // Only a model the plan caps has a token slice to give back; any other name would only
      // add a field to the counter, which every later update rewrites (domain/counter-bounds.ts).
      if (a.plan && Object.hasOwn(a.plan.modelLimits, name)) usedTokens[encodeKey(name)] = tokens;
    }
    const usedWindows = [...releasedWindows("used_windows", req.usedWindows, a.plan, a.period, deps.now(), userWindowHome(deps.leases.windows, productId, req.userId)).values()][0];
    const teamAsked = req.teamUsed !== undefined || req.teamUsedWindows.length > 0;
    const [lease, windows, team] = await Promise.all([
      deps.leases.store.release(a.counterId, holder, toNano(used), usedTokens),
      deps.leases.windows.release(windowDocId(productId, req.userId), holder, {
        ...usedWindows?.used,
        ...releasedMemberWindows(deps.leases.windows, productId, req.userId, user, req.usedMemberWindows, deps.now()),
      }),
      teamAsked ? releaseTeamSlice(deps.leases, productId, user, holder, { used: req.teamUsed, windows: req.teamUsedWindows }, deps.now()) : undefined,
    ]);
    if (!lease && !windows && !team) throw rpcError.notFound(`lease "${holder}" not found in the current period of user "${req.userId}"`);
    const teamPart = team ?? undefined;
    if (!lease) return { lease: { ...leaseMessage(holder, { granted: 0, spent: 0, expires_at: windows?.expires_at }, { ttlMs: 0, periodEnd: a.period.end, spendLimited: false }), team: teamPart } };
    const spendLimited = a.plan?.maxSpendPerPeriod !== undefined && a.plan.maxSpendPerPeriod !== null;
    return { lease: { ...leaseMessage(holder, lease, { ttlMs: 0, periodEnd: a.period.end, spendLimited }), team: teamPart } };
  };
}
