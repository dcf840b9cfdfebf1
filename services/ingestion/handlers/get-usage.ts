import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import { decodeKeys } from "../domain/field-keys.ts";
import { parseUsagePeriod, toDollars } from "@meter/rules";
import type { IngestionDeps } from "../deps.ts";
import { dollarsByModel } from "../store/counters.ts";
import { attribute } from "../domain/attribution.ts";
import { counterId, monthCounterId } from "../domain/counter-ids.ts";
import { plus, type Totals } from "../domain/totals.ts";
import { catchUp } from "../late-changes/follow.ts";
import { requireUser } from "./common.ts";

/**
 * A month's totals: its own counter plus the share of the period counter that starts with
 * the month (CounterDoc.month): two reads by `_id`, whatever the number of events.
 */
async function monthTotals(deps: IngestionDeps, productId: string, userId: string, start: Date): Promise<Totals | null> {
  const [own, period] = await Promise.all([
    deps.counters.get(monthCounterId(productId, userId, start)),
    deps.counters.get(counterId(productId, userId, start)),
  ]);
  return plus(own, period?.month);
}

/**
 * current_period reads the user's counter for the period in force now, a calendar month the
 * user's counter for that month and a period's share of it, whatever the number of events.
 */
export function getUsage(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["getUsage"] {
  return async (req) => {
    const productId = req.productId;
    const now = deps.now();
    const period = parseUsagePeriod(req.period, now);
    if (!period) throw rpcError.invalid("period must be current_period, current_month or YYYY-MM (month 01-12)");
    const user = await requireUser(deps, productId, req.userId);
    await catchUp(deps, productId, req.userId, user);
    const label = req.period || "current_period";
    const counter =
      period.kind === "current_period"
        ? await deps.counters.get(attribute(productId, req.userId, user, now).counterId)
        : await monthTotals(deps, productId, req.userId, period.start);
    return {
      userId: req.userId,
      period: label,
      totalCost: toDollars(counter?.cost ?? 0),
      totalTokens: BigInt(counter?.tokens ?? 0),
      tokensByModel: decodeKeys(counter?.tokens_by_model),
      costByModel: decodeKeys(dollarsByModel(counter?.cost_by_model)),
      toolCallsCount: BigInt(counter?.tool_calls ?? 0),
    };
  };
}
