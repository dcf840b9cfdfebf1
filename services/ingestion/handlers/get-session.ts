import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { toTimestamp } from "@meter/lib/time";
import { decodeKeys } from "../domain/field-keys.ts";
import type { IngestionDeps } from "../deps.ts";
import { attribute } from "../usage.ts";
import { requireProduct, requireUser } from "./common.ts";

/** Plan name reported for a user without a plan (with sdk_enabled false). */
export const NO_PLAN = "none";

/**
 * Plan fields reported for a user without a plan: SPEC.md's session window and pre-call
 * buffer defaults, and no prices (tools cost nothing, as manual events of such users do).
 */
const NO_PLAN_CONFIG = { sessionTimeoutMinutes: 30, defaultToolCost: 0, preCallBufferTokens: 4096 };

/**
 * The session bootstrap: one call to the plans service and one counter document read.
 * sdk_enabled is true when a plan is in force for the user, i.e. the client library must
 * enforce plan_config; false means no plan: permissive defaults, meter but never gate.
 */
export function getSession(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["getSession"] {
  return async (req) => {
    const productId = requireProduct(req.productId);
    const user = await requireUser(deps, productId, req.userId);
    const a = attribute(productId, req.userId, user, deps.now());
    const counter = await deps.counters.get(a.counterId);
    const plan = a.plan;
    return {
      userId: req.userId,
      serviceUserId: user.id,
      plan: plan?.name ?? NO_PLAN,
      sdkEnabled: plan !== null,
      planConfig: {
        maxSpendPerPeriod: plan?.maxSpendPerPeriod,
        maxSpendPerSession: plan?.maxSpendPerSession,
        softGateAt: plan?.softGateAt ?? 0.8,
        hardGateAt: plan?.hardGateAt ?? 1.0,
        modelLimits: Object.fromEntries(
          Object.entries(plan?.modelLimits ?? {}).map(([m, l]) => [m, { maxTokensPerPeriod: BigInt(l.maxTokensPerPeriod) }]),
        ),
        costRates: plan?.costRates ?? {},
        sessionTimeoutMinutes: plan?.sessionTimeoutMinutes ?? NO_PLAN_CONFIG.sessionTimeoutMinutes,
        defaultCostRate: plan?.defaultCostRate,
        toolCosts: plan?.toolCosts ?? {},
        defaultToolCost: plan?.defaultToolCost ?? NO_PLAN_CONFIG.defaultToolCost,
        preCallEstimate: plan?.preCallEstimate ?? false,
        preCallBufferTokens: BigInt(plan?.preCallBufferTokens ?? NO_PLAN_CONFIG.preCallBufferTokens),
      },
      currentUsage: {
        periodCost: counter?.cost ?? 0,
        periodTokensTotal: BigInt(counter?.tokens ?? 0),
        periodTokensByModel: decodeKeys(counter?.tokens_by_model),
        periodCostByModel: decodeKeys(counter?.cost_by_model),
      },
      billingPeriod: { start: toTimestamp(a.period.start), end: toTimestamp(a.period.end) },
    };
  };
}
