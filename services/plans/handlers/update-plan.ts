import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { PlanSettingsSchema, type PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import { toPlan } from "./mapping.ts";
import { applyMask, assertValid, fromSettings, planProblems, planSize, roundAmounts } from "../domain/settings.ts";
import type { PlansDeps } from "../deps.ts";
import { announce, tooLarge } from "./common.ts";

const MAX_ATTEMPTS = 10;

/**
 * Read, merge, validate the whole result, then write conditionally on the version read; a
 * concurrent update in between makes the write miss and the merge is redone on fresh data.
 */
export function updatePlan(deps: PlansDeps): ServiceImpl<typeof PlansService>["updatePlan"] {
  return async (req) => {
    const productId = req.productId;
    const sent = fromSettings(req.plan ?? create(PlanSettingsSchema));
    const paths = req.updateMask?.paths ?? [];
    for (let attempt = 1; ; attempt++) {
      // Plan ids are UUIDs; anything else simply matches nothing.
      const current = await deps.plans.get(productId, req.planId.toLowerCase());
      if (!current) throw rpcError.notFound(`plan "${req.planId}" not found`);
      if (paths.length === 0) return { plan: toPlan(current) };
      // A plan stored before amounts were kept to the nano-dollar may hold one below the unit
      // (enforced as $0 all along): rounded here, it is what it was, and no longer refused as sent.
      const merged = applyMask(roundAmounts(current), sent, paths);
      assertValid(planProblems(merged));
      const next = roundAmounts(merged);
      const result = await deps.plans.replace(productId, current, next);
      if (result === "duplicate") throw rpcError.alreadyExists(`a plan named "${next.name}" already exists`);
      if (typeof result === "object" && "limit" in result) {
        throw rpcError.invalidFields([{ path: "", message: tooLarge(result.has, planSize(next) - planSize(current)) }]);
      }
      if (result !== "conflict") {
        await announce(deps, productId, { planId: result.id });
        return { plan: toPlan(result) };
      }
      if (attempt >= MAX_ATTEMPTS) throw rpcError.unavailable("the plan is being changed concurrently; retry");
    }
  };
}
