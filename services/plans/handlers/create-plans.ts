import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import { toPlan } from "../mapping.ts";
import { LIMITS, assertValid, fromSettings, newPlanValues, planProblems } from "../settings.ts";
import type { PlansDeps } from "../deps.ts";
import { requireProduct } from "./common.ts";

/**
 * Validates every plan first (nothing is created when one is invalid), then inserts them in
 * request order; the unique index on (product, name) decides which names are duplicates.
 */
export function createPlans(deps: PlansDeps): ServiceImpl<typeof PlansService>["createPlans"] {
  return async (req) => {
    const productId = requireProduct(req.productId);
    if (req.plans.length === 0) throw rpcError.invalid("plans must contain at least one plan");
    if (req.plans.length > LIMITS.plansPerRequest) {
      throw rpcError.invalid(`at most ${LIMITS.plansPerRequest} plans per request`);
    }
    const gates = { soft_gate_at: req.softGateAt, hard_gate_at: req.hardGateAt };
    const values = req.plans.map((s) => newPlanValues(fromSettings(s), gates));
    assertValid(values.flatMap((v, i) => planProblems(v, `plans[${i}].`)));

    const created = [];
    const duplicates: string[] = [];
    for (const v of values) {
      const plan = await deps.plans.insert(productId, v);
      if (plan) created.push(toPlan(plan));
      else duplicates.push(v.name);
    }
    if (created.length === 0) {
      throw rpcError.alreadyExists(`every plan already exists: ${duplicates.join(", ")}`);
    }
    deps.logger.info({ productId, created: created.length, duplicates: duplicates.length }, "plans created");
    return { plans: created, duplicates };
  };
}
