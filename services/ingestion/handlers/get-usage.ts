import type { ServiceImpl } from "@connectrpc/connect";
import type { GetUsageResponse, IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import { parseUsagePeriod, toDollars, type UsagePeriod } from "@meter/rules";
import type { IngestionDeps } from "../deps.ts";
import { modelBreakdown, type CounterStore } from "../store/counters.ts";
import { attribute } from "../domain/attribution.ts";
import { counterId, monthCounterId } from "../domain/counter-ids.ts";
import { plus, type Totals } from "../domain/totals.ts";
import { catchUp } from "../late-changes/follow.ts";
import { requireUser } from "./common.ts";

/**
 * A month's totals: its own counter plus the share of the period counter that starts with
 * the month (CounterDoc.month): two reads by `_id`, whatever the number of events. `owner` is
 * the user's external id (a team's service id in the teams' counters).
 */
async function monthTotals(counters: Pick<CounterStore, "get">, productId: string, owner: string, start: Date): Promise<Totals | null> {
  const [own, period] = await Promise.all([counters.get(monthCounterId(productId, owner, start)), counters.get(counterId(productId, owner, start))]);
  return plus(own, period?.month);
}

/** The period of a usage query, or INVALID_ARGUMENT. */
export function usagePeriod(label: string, now: Date): UsagePeriod {
  const period = parseUsagePeriod(label, now);
  if (!period) throw rpcError.invalid("period must be current_period, current_month or YYYY-MM (month 01-12)");
  return period;
}

/**
 * What a usage query reads: the counter of the period in force now (`current`), or a calendar
 * month's counter and a period's share of it.
 */
export async function usageTotals(
  counters: Pick<CounterStore, "get">,
  productId: string,
  owner: string,
  period: UsagePeriod,
  current: () => string,
): Promise<Pick<GetUsageResponse, "totalCost" | "totalTokens" | "tokensByModel" | "costByModel" | "toolCallsCount">> {
  const counter = period.kind === "current_period" ? await counters.get(current()) : await monthTotals(counters, productId, owner, period.start);
  const models = modelBreakdown(counter);
  return {
    totalCost: toDollars(counter?.cost ?? 0),
    totalTokens: BigInt(counter?.tokens ?? 0),
    tokensByModel: models.tokens,
    costByModel: models.dollars,
    toolCallsCount: BigInt(counter?.tool_calls ?? 0),
  };
}

/**
 * current_period reads the user's counter for the period in force now, a calendar month the
 * user's counter for that month and a period's share of it, whatever the number of events.
 */
export function getUsage(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["getUsage"] {
  return async (req) => {
    const productId = req.productId;
    const now = deps.now();
    const period = usagePeriod(req.period, now);
    const user = await requireUser(deps, productId, req.userId);
    await catchUp(deps, productId, req.userId, user);
    const totals = await usageTotals(deps.counters, productId, req.userId, period, () => attribute(productId, req.userId, user, now).counterId);
    return { userId: req.userId, period: req.period || "current_period", ...totals };
  };
}
