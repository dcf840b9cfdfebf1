import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import { toPlan } from "./mapping.ts";
import { LIMITS, assertValid, fromSettings, newPlanValues, planProblems, planSize, roundAmounts } from "../domain/settings.ts";
import type { PlansDeps } from "../deps.ts";
import { tooLarge } from "./common.ts";

/**
 * Validates every plan first (nothing is created when one is invalid), then inserts them in
 * request order; the unique index on (product, name) decides which names are duplicates.
 * Names the product already has are duplicates before anything is reserved, so that posting
 * the whole catalogue again is answered 409 (or 201 with only the new plans), not refused for
 * limits that the existing plans already count in.
 */
export function createPlans(deps: PlansDeps): ServiceImpl<typeof PlansService>["createPlans"] {
  return async (req) => {
    const productId = req.productId;
    if (req.plans.length === 0) throw rpcError.invalid("plans must contain at least one plan");
    if (req.plans.length > LIMITS.plansPerRequest) {
      throw rpcError.invalid(`at most ${LIMITS.plansPerRequest} plans per request`);
    }
    const gates = { soft_gate_at: req.softGateAt, hard_gate_at: req.hardGateAt };
    const sent = req.plans.map((s) => newPlanValues(fromSettings(s), gates));
    assertValid(sent.flatMap((v, i) => planProblems(v, `plans[${i}].`)));
    const values = sent.map(roundAmounts);

    const existing = new Set((await deps.plans.names(productId)).values());
    const fresh = values.filter((v) => !existing.has(v.name));
    if (fresh.length === 0) throw rpcError.alreadyExists(`every plan already exists: ${values.map((v) => v.name).join(", ")}`);
    const sizes = fresh.map(planSize);
    const ids = await deps.plans.reserve(productId, sizes);
    if (!Array.isArray(ids)) {
      const adding = sizes.reduce((n, b) => n + b, 0);
      throw rpcError.invalidFields([
        ids.limit === "plans"
          ? {
              path: "/plans",
              message: `would take the product to ${ids.has + fresh.length} plans; at most ${LIMITS.plansPerProduct} per product (it has ${ids.has}): change an existing plan instead`,
            }
          : { path: "/plans", message: tooLarge(ids.has, adding) },
      ]);
    }
    const created = [];
    const duplicates = values.filter((v) => existing.has(v.name)).map((v) => v.name);
    const unused: { id: string; size: number }[] = [];
    // Places of `fresh` tried so far (`duplicates` also names plans that existed before: not a count of them).
    let tried = 0;
    try {
      for (const [i, v] of fresh.entries()) {
        tried = i + 1;
        const plan = await deps.plans.insert(productId, ids[i]!, v);
        if (plan) created.push(toPlan(plan));
        else {
          duplicates.push(v.name);
          unused.push({ id: ids[i]!, size: sizes[i]! });
        }
      }
    } catch (err) {
      // The places of plans not tried go back; the failed insert may have been stored after
      // all, so its place stays (taken, or read as missing).
      unused.push(...ids.slice(tried).map((id, i) => ({ id, size: sizes[tried + i]! })));
      throw err;
    } finally {
      await deps.plans.release(productId, unused);
    }
    if (created.length === 0) {
      throw rpcError.alreadyExists(`every plan already exists: ${duplicates.join(", ")}`);
    }
    deps.logger.info({ productId, created: created.length, duplicates: duplicates.length }, "plans created");
    return { plans: created, duplicates };
  };
}
