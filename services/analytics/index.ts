import type { Db } from "mongodb";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import type { PeerUrls } from "@meter/lib/config";
import type { Logger } from "@meter/lib/logger";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";
import { plansClient, type PlansPort } from "./adapters/plans.ts";
import { Roller, type FaultHooks } from "./roller.ts";
import { DirtyStore } from "./store/dirty.ts";
import { LedgerStore } from "./store/ledger.ts";
import { RollupStore } from "./store/rollups.ts";
import type { AnalyticsDeps } from "./deps.ts";
import { getBreakdown } from "./handlers/get-breakdown.ts";
import { getGateTimeseries } from "./handlers/get-gate-timeseries.ts";
import { getPlanSubscribers } from "./handlers/get-plan-subscribers.ts";
import { getSummary } from "./handlers/get-summary.ts";
import { getTimeseries } from "./handlers/get-timeseries.ts";
import { getTopUsers } from "./handlers/get-top-users.ts";
import { getWindowReport } from "./handlers/get-window-report.ts";
import { recordEvents } from "./handlers/record-events.ts";

export interface AnalyticsServiceOptions {
  db: Db;
  logger: Logger;
  peers: PeerUrls;
  /** Clock for the query windows (tests pin it near midnight UTC). */
  now?: () => Date;
  /** Roller pause between passes when idle; 0 turns the background roller off. Default 500. */
  rollIntervalMs?: number;
  /** How long a roller holds a day before another replica may take it over. Default 60 000. */
  rollLeaseMs?: number;
  /** The plans service; by default a gRPC client to peers.plans. */
  plans?: PlansPort;
  /** Crash points for tests. */
  faults?: FaultHooks;
}

export interface AnalyticsModule extends ServiceModule {
  /** Recomputes every dirty day now; returns how many were recomputed (tests, bench). */
  rollPending(): Promise<number>;
}

/** The analytics service: a ledger of the facts pushed by ingestion, rolled up per product-day. */
export async function createAnalyticsService(opts: AnalyticsServiceOptions): Promise<AnalyticsModule> {
  const ledger = new LedgerStore(opts.db);
  const dirty = new DirtyStore(opts.db);
  const rollups = new RollupStore(opts.db);
  await ledger.init();
  const roller = new Roller({
    ledger,
    dirty,
    rollups,
    logger: opts.logger,
    intervalMs: opts.rollIntervalMs ?? 500,
    leaseMs: opts.rollLeaseMs ?? 60_000,
    faults: opts.faults,
  });
  const deps: AnalyticsDeps = {
    ledger,
    dirty,
    rollups,
    roller,
    plans: opts.plans ?? plansClient(opts.peers.plans),
    logger: opts.logger,
    now: opts.now ?? (() => new Date()),
    faults: opts.faults,
  };
  return {
    name: "analytics",
    serviceName: AnalyticsService.typeName,
    routes(router) {
      router.service(AnalyticsService, {
        recordEvents: recordEvents(deps),
        getSummary: getSummary(deps),
        getTimeseries: getTimeseries(deps),
        getGateTimeseries: getGateTimeseries(deps),
        getBreakdown: getBreakdown(deps),
        getTopUsers: getTopUsers(deps),
        getPlanSubscribers: getPlanSubscribers(deps),
        getWindowReport: getWindowReport(deps),
      });
    },
    healthy: () => pingDb(opts.db),
    async start() {
      roller.start();
    },
    async stop() {
      await roller.stop();
    },
    rollPending: () => roller.rollPending(Infinity),
  };
}

export { analyticsSettings, analyticsSettingsFields } from "./config.ts";
