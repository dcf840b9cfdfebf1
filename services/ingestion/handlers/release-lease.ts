import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import type { IngestionDeps } from "../deps.ts";
import { attribute } from "../domain/attribution.ts";
import { requireUser } from "./common.ts";
import { toNano } from "@meter/rules";
import { releasedWindows, userWindowHome } from "../windows/lease-request.ts";
import { windowDocId } from "../windows/shares.ts";
import { releaseTeamSlice, releasedMemberWindows } from "../leases/team.ts";
import { leaseMessage, releasedTokens, requireDollars, requireLeaseId } from "../leases/request.ts";

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
    const user = await requireUser(deps, productId, req.userId);
    const a = attribute(productId, req.userId, user, deps.now());
    const usedTokens = releasedTokens("used_tokens", req.usedTokens, a.plan);
    const usedWindows = [...releasedWindows("used_windows", req.usedWindows, a.plan, a.period, deps.now(), userWindowHome(deps.leases.windows, productId, req.userId)).values()][0];
    const teamAsked = req.teamUsed !== undefined || req.teamUsedWindows.length > 0 || Object.keys(req.teamUsedTokens).length > 0;
    const [lease, windows, team] = await Promise.all([
      deps.leases.store.release(a.counterId, holder, toNano(used), usedTokens),
      deps.leases.windows.release(windowDocId(productId, req.userId), holder, {
        ...usedWindows?.used,
        ...releasedMemberWindows(deps.leases.windows, productId, req.userId, user, req.usedMemberWindows, deps.now()),
      }),
      teamAsked ? releaseTeamSlice(deps.leases, productId, user, holder, { used: req.teamUsed, tokens: req.teamUsedTokens, windows: req.teamUsedWindows }, deps.now()) : undefined,
    ]);
    if (!lease && !windows && !team) throw rpcError.notFound(`lease "${holder}" not found in the current period of user "${req.userId}"`);
    const teamPart = team ?? undefined;
    if (!lease) return { lease: { ...leaseMessage(holder, { granted: 0, spent: 0, expires_at: windows?.expires_at }, { ttlMs: 0, periodEnd: a.period.end, spendLimited: false }), team: teamPart } };
    const spendLimited = a.plan?.maxSpendPerPeriod !== undefined && a.plan.maxSpendPerPeriod !== null;
    return { lease: { ...leaseMessage(holder, lease, { ttlMs: 0, periodEnd: a.period.end, spendLimited }), team: teamPart } };
  };
}
