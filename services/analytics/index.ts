import { trackJobQueue } from "@meter/lib/metrics";
import type { Db } from "mongodb";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import type { PeerUrls } from "@meter/lib/config";
import type { Logger } from "@meter/lib/logger";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";
import { plansClient, type PlansPort } from "./adapters/plans.ts";
import { JobScheduler } from "@meter/lib/jobs";
import { defineRetention, scheduleRetention } from "./jobs/retention.ts";
import { defineRoll, scheduleRoll } from "./jobs/roll.ts";
import { frozenBefore, RETENTION_DEFAULTS, type RetentionPolicy } from "./domain/retention-policy.ts";
import { runRetention, type RetentionReport } from "./flows/retention.ts";
import { Roller, type FaultHooks } from "./flows/roller.ts";
import { BaseStore } from "./store/bases.ts";
import { DirtyStore } from "./store/dirty.ts";
import { LedgerStore } from "./store/ledger.ts";
import { RollupStore } from "./store/rollups.ts";
import { UserDayCache } from "./store/user-day-cache.ts";
import { AnswersSeen, WindowAnswerStore } from "./store/window-answers.ts";
import type { AnalyticsDeps } from "./deps.ts";
import { getBreakdown } from "./handlers/get-breakdown.ts";
import { getGateTimeseries } from "./handlers/get-gate-timeseries.ts";
import { getPlanSubscribers } from "./handlers/get-plan-subscribers.ts";
import { getSummary } from "./handlers/get-summary.ts";
import { getTimeseries } from "./handlers/get-timeseries.ts";
import { getTopUsers } from "./handlers/get-top-users.ts";
import { getTopTeams } from "./handlers/get-top-teams.ts";
import { getWindowReport } from "./handlers/get-window-report.ts";
import { recordEvents } from "./handlers/record-events.ts";

export interface AnalyticsServiceOptions {
  db: Db;
  logger: Logger;
  peers: PeerUrls;
  /** Clock for the query windows (tests pin it near midnight UTC). */
  now?: () => Date;
  /**
   * Interval of the repeating roll job (jobs/roll.ts) while it finds dirty days; 0 runs no job
   * in this process (tests then call rollPending and runRetention). Default 500.
   */
  rollIntervalMs?: number;
  /** Longest pause of the roll job while it finds nothing, and the job scheduler's scan interval. Default 30 000. */
  idlePollMaxMs?: number;
  /** How long a roller holds a day, and the roll job's lock lifetime. Default 60 000. */
  rollLeaseMs?: number;
  /** Retention of the ledger and rollups; defaults in domain/retention-policy.ts. */
  retention?: Partial<RetentionPolicy>;
  /** The plans service; by default a gRPC client to peers.plans. */
  plans?: PlansPort;
  /** Memory for the per-user columns of days already read, in MB (0: none kept). Default 128. */
  userCacheMb?: number;
  /** Crash points for tests. */
  faults?: FaultHooks;
}

export interface AnalyticsModule extends ServiceModule {
  /** Recomputes every dirty day now; returns how many were recomputed (tests, bench). */
  rollPending(): Promise<number>;
  /** One retention pass as of `now` (what the daily job does; tests, bench). */
  runRetention(now?: Date): Promise<RetentionReport>;
}

/** The analytics service: a ledger of the facts pushed by ingestion, rolled up per product-day. */
export async function createAnalyticsService(opts: AnalyticsServiceOptions): Promise<AnalyticsModule> {
  const ledger = new LedgerStore(opts.db);
  const late = new LedgerStore(opts.db, "late_segments", "day");
  const bases = new BaseStore(opts.db);
  const dirty = new DirtyStore(opts.db);
  // Day marks waiting for their roll-up: meter_job_queue_due{name="analytics_dirty_days"}.
  trackJobQueue("analytics_dirty_days", dirty.backlog);
  const rollups = new RollupStore(opts.db);
  await Promise.all([ledger.init(), late.init(), bases.init()]);
  const retention = { ...RETENTION_DEFAULTS, ...opts.retention };
  const now = opts.now ?? (() => new Date());
  const leaseMs = opts.rollLeaseMs ?? 60_000;
  const intervalMs = opts.rollIntervalMs ?? 500;
  const idlePollMaxMs = opts.idlePollMaxMs ?? 30_000;
  const roller = new Roller({
    ledger,
    late,
    bases,
    frozenBefore: () => frozenBefore(now(), retention),
    dirty,
    rollups,
    logger: opts.logger,
    leaseMs,
    faults: opts.faults,
    now,
  });
  const scheduler = new JobScheduler(opts.db, opts.logger, idlePollMaxMs, "analytics");
  await scheduler.init();
  const deps: AnalyticsDeps = {
    ledger,
    late,
    bases,
    dirty,
    rollups,
    userDays: new UserDayCache((opts.userCacheMb ?? 128) * 1024 * 1024),
    windowAnswers: new WindowAnswerStore(opts.db),
    answersSeen: new AnswersSeen(),
    roller,
    scheduler,
    rollJobs: intervalMs > 0,
    retention,
    plans: opts.plans ?? plansClient(opts.peers.plans),
    logger: opts.logger,
    now,
    faults: opts.faults,
  };
  defineRoll(deps, leaseMs);
  defineRetention(deps, deps.retention);
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
        getTopTeams: getTopTeams(deps),
        getPlanSubscribers: getPlanSubscribers(deps),
        getWindowReport: getWindowReport(deps),
      });
    },
    healthy: () => pingDb(opts.db),
    async start() {
      if (!deps.rollJobs) return;
      await scheduler.start();
      await scheduleRoll(deps, Math.max(intervalMs, 50), idlePollMaxMs);
      await scheduleRetention(deps);
    },
    async stop() {
      roller.halt();
      await scheduler.stop(5_000);
    },
    rollPending: () => roller.rollPending(Infinity),
    runRetention: (now = deps.now()) => runRetention(deps, deps.retention, now),
  };
}

export { analyticsSettings, analyticsSettingsFields } from "./config.ts";
