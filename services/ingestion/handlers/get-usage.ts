import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import { decodeKeys } from "../domain/field-keys.ts";
import { parseUsagePeriod } from "../domain/period.ts";
import type { IngestionDeps } from "../deps.ts";
import { attribute } from "../usage.ts";
import { requireProduct, requireUser } from "./common.ts";

/**
 * current_period reads the user's counter for the period in force now (one document);
 * a calendar month sums the stored events of that month by model.
 */
export function getUsage(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["getUsage"] {
  return async (req) => {
    const productId = requireProduct(req.productId);
    const now = deps.now();
    const period = parseUsagePeriod(req.period, now);
    if (!period) throw rpcError.invalid("period must be current_period, current_month or YYYY-MM (month 01-12)");
    const user = await requireUser(deps, productId, req.userId);
    const label = req.period || "current_period";
    if (period.kind === "current_period") {
      const counter = await deps.ledger.get(attribute(productId, req.userId, user, now).counterId);
      return {
        userId: req.userId,
        period: label,
        totalCost: counter?.cost ?? 0,
        totalTokens: BigInt(counter?.tokens ?? 0),
        tokensByModel: decodeKeys(counter?.tokens_by_model),
        costByModel: decodeKeys(counter?.cost_by_model),
        toolCallsCount: BigInt(counter?.tool_calls ?? 0),
      };
    }
    const rows = await deps.events.totalsByModel(productId, req.userId, period.start, period.end);
    let totalCost = 0;
    let totalTokens = 0;
    let toolCalls = 0;
    const tokensByModel: Record<string, number> = {};
    const costByModel: Record<string, number> = {};
    for (const r of rows) {
      totalCost += r.cost;
      totalTokens += r.tokens;
      toolCalls += r.tools;
      if (r.model !== null) {
        tokensByModel[r.model] = r.tokens;
        costByModel[r.model] = r.cost;
      }
    }
    return {
      userId: req.userId,
      period: label,
      totalCost,
      totalTokens: BigInt(totalTokens),
      tokensByModel,
      costByModel,
      toolCallsCount: BigInt(toolCalls),
    };
  };
}
