import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import type { IngestionDeps } from "../deps.ts";
import { attribute } from "../usage.ts";
import { requireProduct, requireUser } from "./common.ts";
import { MAX_LEASE_TTL_MS, leaseMessage, requireDollars, requireLeaseId } from "./lease-common.ts";

/**
 * Grants the holder a slice of the user's current period cap (max_spend_per_period x
 * hard_gate_at). A user without a finite cap has nothing to lease: `limited` is false.
 */
export function acquireLease(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["acquireLease"] {
  return async (req) => {
    const productId = requireProduct(req.productId);
    const holder = requireLeaseId("holder", req.holder);
    const need = requireDollars("need", req.need);
    const want = requireDollars("want", req.want);
    if (want < need) throw rpcError.invalid("want must be at least need");
    const ttl = Number(req.ttlMs);
    if (ttl < 0 || ttl > MAX_LEASE_TTL_MS) throw rpcError.invalid(`ttl_ms must be between 0 and ${MAX_LEASE_TTL_MS}`);
    const ttlMs = ttl || deps.leases.ttlMs;
    const user = await requireUser(deps, productId, req.userId);
    const now = deps.now();
    const a = attribute(productId, req.userId, user, now);
    const max = a.plan?.maxSpendPerPeriod;
    if (max === undefined || max === null) return { limited: false };
    const cap = max * (a.plan?.hardGateAt ?? 1);
    const ref = { id: a.counterId, productId, userId: req.userId, start: a.period.start, end: a.period.end };
    const view = await deps.leases.store.acquire(ref, { holder, cap, need, want, ttlMs, graceMs: deps.leases.graceMs, now });
    return { limited: true, lease: leaseMessage(holder, view.lease, { ...view, ttlMs, periodEnd: a.period.end }) };
  };
}
