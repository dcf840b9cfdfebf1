import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { periodAt } from "@meter/rules";
import type { IngestionDeps } from "../deps.ts";
import { counterId } from "../domain/counter-ids.ts";
import { requireTeam } from "./common.ts";
import { catchUpTeam } from "../late-changes/follow.ts";
import { usagePeriod, usageTotals } from "./get-usage.ts";

/** A team's usage (the sums over its members), read as a user's is from the team's counters. */
export function getTeamUsage(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["getTeamUsage"] {
  return async (req) => {
    const productId = req.productId;
    const now = deps.now();
    const period = usagePeriod(req.period, now);
    const team = await requireTeam(deps, productId, req.teamId);
    await catchUpTeam(deps, productId, team);
    const totals = await usageTotals(deps.teamCounters, productId, team.id, period, () => counterId(productId, team.id, periodAt(team.subscriptions, now).start));
    return { teamId: req.teamId, period: req.period || "current_period", ...totals };
  };
}
