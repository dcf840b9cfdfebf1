import type { Collection, Db } from "mongodb";
import type { HandlerContext } from "@connectrpc/connect";
import { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import type { PeerUrls } from "@meter/lib/config";
import { JobScheduler } from "@meter/lib/jobs";
import type { Logger } from "@meter/lib/logger";
import { collectionBacklog, countIngested, ingestionBusyRefusals, ingestionInFlight, quarantinedJobs, seriesAtZero, trackOutbox, trackSetAside } from "@meter/lib/metrics";
import { InFlightBound } from "@meter/lib/in-flight-bound";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";
import { plansDirectory, type UserDirectory } from "./adapters/plans.ts";
import { analyticsRecorder, webhooksPublisher, type AnalyticsRecorder, type WebhookPublisher } from "./adapters/peers.ts";
import type { IngestionDeps } from "./deps.ts";
import { KeyedGate } from "@meter/lib/keyed-gate";
import { createManualEvent } from "./handlers/create-manual-event.ts";
import { getPeriodSpends } from "./handlers/get-period-spends.ts";
import { getSession } from "./handlers/get-session.ts";
import { getLimits } from "./handlers/get-limits.ts";
import { getTeamLimits } from "./handlers/get-team-limits.ts";
import { getTeamUsage } from "./handlers/get-team-usage.ts";
import { acquireLease } from "./handlers/acquire-lease.ts";
import { releaseLease } from "./handlers/release-lease.ts";
import { LeaseStore, emptyCounter } from "./leases/store.ts";
import { getUsage } from "./handlers/get-usage.ts";
import { ingestGateEvents } from "./handlers/ingest-gate-events.ts";
import { ingestUsageEvents } from "./handlers/ingest-usage-events.ts";
import { listGateEvents } from "./handlers/list-gate-events.ts";
import { defineRelay, kickRelay, scheduleRelay } from "./jobs/relay.ts";
import { defineRetention, scheduleRetention } from "./jobs/retention.ts";
import { defineLateChanges, kickLateChanges, scheduleLateChanges } from "./jobs/late-changes.ts";
import { outboxes } from "./relay/handover.ts";
import { Relay } from "./relay/outbox.ts";
import { CounterStore } from "./store/counters.ts";
import { WindowStore, type WindowDoc } from "./windows/store.ts";
import { WindowDocMove, type StoredBefore } from "./windows/move.ts";
import { WindowLeaseStore, emptyWindowDoc } from "./windows/lease-store.ts";
import { CrossingStore } from "./thresholds/store.ts";
import { GateEventStore } from "./store/gate-events.ts";
import { UsageEventStore } from "./store/usage-events.ts";
import { JobStore } from "./store/jobs.ts";
import { OutboxStore, WAITING } from "./store/outbox.ts";
import { ArrivalStore } from "./late-changes/arrivals.ts";
import { followLateChanges, notice } from "./late-changes/follow.ts";
import { LateChanges } from "./late-changes/pending.ts";
import { recoverStale } from "./exactly-once/recovery.ts";
import { RETENTION_DEFAULTS, type RetentionPolicy } from "./domain/retention-policy.ts";
import { runIngestionRetention, type IngestionRetentionReport } from "./retention.ts";
import { CreditStore } from "./credits/store.ts";
import { createCreditGrant } from "./handlers/create-credit-grant.ts";
import { getCredits } from "./handlers/get-credits.ts";
import { voidCreditGrant } from "./handlers/void-credit-grant.ts";
import { listCreditLedger } from "./handlers/list-credit-ledger.ts";
import { defineCreditExpiry, scheduleCreditExpiry } from "./jobs/credit-expiry.ts";

/** Largest batch (events) accepted by IngestUsageEvents / IngestGateEvents. */
export const MAX_BATCH_EVENTS = 10_000;

export interface IngestionServiceOptions {
  db: Db;
  logger: Logger;
  peers: PeerUrls;
  /** Interval of the repeating relay round (outboxes and recovery sweep; jobs/relay.ts), in ms. */
  relayIntervalMs?: number;
  /** Longest pause of the relay job while it finds nothing, and the job scheduler's scan interval. Default 30 000. */
  idlePollMaxMs?: number;
  /** Longest backoff of a relay whose peer keeps failing (ms). */
  relayMaxBackoffMs?: number;
  relayBatchSize?: number;
  /** Failed handovers of one outbox entry (its peer reachable) before it is set aside. Default 10. */
  relayMaxAttempts?: number;
  /** Lock lifetime of a relay round (jobs/relay.ts), renewed after every entry. Default 60 000. */
  relayLockMs?: number;
  /** Age after which a job left unfinished by an interrupted request is completed by others (ms). */
  recoveryAfterMs?: number;
  maxBatchEvents?: number;
  /** How long an arrived event may still move to the period of a subscription recorded late (ms). */
  lateChangeWindowMs?: number;
  /** Retention of events and crossings; defaults in retention.ts. */
  retention?: Partial<RetentionPolicy>;
  /** Ingestion writes (usage and gate batches) one product may run at once in this process; 0: no limit (lib/src/keyed-gate.ts). */
  productWriteConcurrency?: number;
  /**
   * Events of usage and gate batches this process holds at once (running or waiting for their
   * product's place); a batch beyond it is refused with a retry hint (429). Default 20 000; 0: no bound.
   */
  maxEventsInFlight?: number;
  /** Budget leases: default lifetime and grace after expiry (ms). */
  leaseTtlMs?: number;
  leaseGraceMs?: number;
  /** The first lease requests for a budget not asked for lately wait for each other until none arrived for this long (ms; 0: no wait). Default 25. */
  leaseGatherMs?: number;
  /** Peer overrides (tests); by default gRPC clients to `peers`. */
  users?: UserDirectory;
  webhooks?: WebhookPublisher;
  analytics?: AnalyticsRecorder;
  now?: () => Date;
}

export interface IngestionModule extends ServiceModule {
  /** One retention pass as of `now` (what the daily job does; tests, bench). */
  runRetention(now?: Date): Promise<IngestionRetentionReport>;
}

/** The ingestion service: usage, gate and manual events, per-user period counters, handovers. */
export async function createIngestionService(opts: IngestionServiceOptions): Promise<IngestionModule> {
  const events = new UsageEventStore(opts.db);
  const gates = new GateEventStore(opts.db);
  const crossings = new CrossingStore(opts.db);
  const counters = new CounterStore(opts.db);
  const lateChangeWindowMs = opts.lateChangeWindowMs ?? 600_000;
  // The first lease requests for a budget not asked for lately wait this long for each other (LeaseStore).
  const leaseGatherMs = opts.leaseGatherMs ?? 25;
  const arrivals = new ArrivalStore(opts.db, lateChangeWindowMs);
  const jobs = new JobStore(opts.db);
  const outbox = new OutboxStore(opts.db);
  const relayIntervalMs = opts.relayIntervalMs ?? 1_000;
  const idlePollMaxMs = opts.idlePollMaxMs ?? 30_000;
  const scheduler = new JobScheduler(opts.db, opts.logger, idlePollMaxMs, "ingestion");
  await Promise.all([counters.init(), crossings.init(), scheduler.init()]);
  const now = opts.now ?? (() => new Date());
  // Window documents live beside the counters (windows/move.ts): those of earlier versions follow.
  const windowMove = new WindowDocMove(opts.db.collection<StoredBefore>("windows"), opts.db.collection<WindowDoc>("counters"), now, opts.logger);
  const windows = new WindowStore(opts.db, "counters", "user_id", windowMove);
  const teamCounters = new CounterStore(opts.db, "team_counters", "team_id");
  const teamWindowMove = new WindowDocMove(opts.db.collection<StoredBefore>("team_windows"), opts.db.collection<WindowDoc>("team_counters"), now, opts.logger, "team_id");
  const teamWindows = new WindowStore(opts.db, "team_counters", "team_id", teamWindowMove);
  const deps: IngestionDeps = {
    events,
    counters,
    windows,
    teamCounters,
    teamWindows,
    arrivals,
    lateChanges: new LateChanges(opts.db),
    kickLateChanges: () => kickLateChanges(deps),
    noticeLateChanges: (productId, users) => notice(deps, productId, users),
    gates,
    crossings,
    credits: new CreditStore(opts.db),
    jobs,
    outbox,
    users: opts.users ?? plansDirectory(opts.peers.plans),
    logger: opts.logger,
    limits: { maxBatchEvents: opts.maxBatchEvents ?? MAX_BATCH_EVENTS },
    recoveryAfterMs: opts.recoveryAfterMs ?? 60_000,
    lateChangeWindowMs,
    now,
    recovering: new Map(),
    scheduler,
    kickRelay: () => kickRelay(deps),
    retention: { ...RETENTION_DEFAULTS, ...opts.retention },
    leases: {
      ttlMs: opts.leaseTtlMs ?? 60_000,
      graceMs: opts.leaseGraceMs ?? 30_000,
      store: new LeaseStore(counters.counters, "user_id", leaseGatherMs),
      windows: new WindowLeaseStore(windows.windows, emptyWindowDoc(), windowMove),
      teams: new LeaseStore(teamCounters.counters, "team_id", leaseGatherMs),
      teamWindows: new WindowLeaseStore(teamWindows.windows, emptyWindowDoc("team_id"), teamWindowMove),
      // A team's windows within its period are counted in its period counter (teams/count.ts), their slices beside them.
      teamCounterWindows: new WindowLeaseStore(teamCounters.counters as unknown as Collection<WindowDoc>, (ref) => emptyCounter({ productId: ref.productId, userId: ref.userId, start: ref.start!, end: ref.end! }, "team_id")),
    },
  };
  defineRetention(deps);
  defineLateChanges(deps, () => followLateChanges(deps));
  defineCreditExpiry(deps);
  const relay = new Relay(
    outboxes({
      outbox,
      webhooks: opts.webhooks ?? webhooksPublisher(opts.peers.webhooks),
      analytics: opts.analytics ?? analyticsRecorder(opts.peers.analytics),
    }),
    {
      intervalMs: relayIntervalMs,
      maxBackoffMs: opts.relayMaxBackoffMs ?? 60_000,
      batchSize: opts.relayBatchSize ?? 500,
      maxAttempts: opts.relayMaxAttempts ?? 10,
      logger: opts.logger,
    },
    [{ name: "recover-unfinished-jobs", run: () => recoverStale(deps) }],
  );
  defineRelay(deps, relay, opts.relayLockMs ?? 60_000);
  trackOutbox("ingestion_to_webhooks", collectionBacklog(outbox.webhooks, "created_at", () => WAITING));
  trackOutbox("ingestion_to_analytics", collectionBacklog(outbox.analytics, "created_at", () => WAITING));
  trackSetAside("ingestion_to_webhooks", collectionBacklog(outbox.webhooks, "set_aside_at", () => ({ set_aside_at: { $exists: true } })));
  trackSetAside("ingestion_to_analytics", collectionBacklog(outbox.analytics, "set_aside_at", () => ({ set_aside_at: { $exists: true } })));
  for (const kind of ["usage", "gate"] as const) {
    seriesAtZero(ingestionBusyRefusals, { kind });
    seriesAtZero(quarantinedJobs, { kind });
  }
  const writeGate = new KeyedGate(opts.productWriteConcurrency ?? 4);
  const inFlight = new InFlightBound(opts.maxEventsInFlight ?? 20_000, undefined, undefined, (d) => ingestionInFlight.inc(d));
  // A batch is held from its arrival (waiting for its product's place counts) until it is stored.
  const fair =
    <Req extends { productId: string; events: unknown[] }, Res>(kind: "usage" | "gate", handler: (req: Req, ctx: HandlerContext) => Res | Promise<Res>) =>
    async (req: Req, ctx: HandlerContext) => {
      let release: (finished?: boolean) => void;
      try {
        release = inFlight.take(req.events.length, "events");
      } catch (err) {
        ingestionBusyRefusals.inc({ kind });
        throw err;
      }
      let stored = false;
      try {
        const res = await writeGate.run(req.productId, async () => handler(req, ctx));
        stored = true;
        return res;
      } finally {
        release(stored);
      }
    };
  return {
    name: "ingestion",
    serviceName: IngestionService.typeName,
    routes(router) {
      router.service(IngestionService, {
        ingestUsageEvents: countIngested("usage", fair("usage", ingestUsageEvents(deps))),
        ingestGateEvents: countIngested("gate", fair("gate", ingestGateEvents(deps))),
        createManualEvent: createManualEvent(deps),
        getUsage: getUsage(deps),
        listGateEvents: listGateEvents(deps),
        getSession: getSession(deps),
        acquireLease: acquireLease(deps),
        releaseLease: releaseLease(deps),
        getPeriodSpends: getPeriodSpends(deps),
        getLimits: getLimits(deps),
        getTeamUsage: getTeamUsage(deps),
        getTeamLimits: getTeamLimits(deps),
        createCreditGrant: createCreditGrant(deps),
        getCredits: getCredits(deps),
        voidCreditGrant: voidCreditGrant(deps),
        listCreditLedger: listCreditLedger(deps),
      });
    },
    healthy: () => pingDb(opts.db),
    async start() {
      windowMove.start();
      teamWindowMove.start();
      await scheduler.start();
      // Below 50 ms the relay's polls would starve writers.
      await scheduleRelay(deps, Math.max(relayIntervalMs, 50), idlePollMaxMs);
      await scheduleRetention(deps);
      await scheduleCreditExpiry(deps, Math.max(relayIntervalMs, 50), idlePollMaxMs);
      if (lateChangeWindowMs > 0) await scheduleLateChanges(deps, idlePollMaxMs);
    },
    async stop() {
      windowMove.stop();
      teamWindowMove.stop();
      relay.halt();
      await scheduler.stop(5_000);
    },
    runRetention: (now = deps.now()) => runIngestionRetention(deps, deps.retention, now),
  };
}

export { ingestionSettings, ingestionSettingsFields } from "./config.ts";
