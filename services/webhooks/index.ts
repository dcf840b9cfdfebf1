import type { Db } from "mongodb";
import { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { PeerUrls } from "@meter/lib/config";
import { BACKGROUND_STOP_GRACE_MS } from "@meter/lib/process";
import type { Logger } from "@meter/lib/logger";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";
import { analyticsAdapter, type AnalyticsPort } from "./adapters/analytics.ts";
import type { WebhooksDeps } from "./deps.ts";
import { createEndpoint } from "./handlers/create-endpoint.ts";
import { deleteEndpoint } from "./handlers/delete-endpoint.ts";
import { getEndpointSecret } from "./handlers/get-endpoint-secret.ts";
import { listDeliveries } from "./handlers/list-deliveries.ts";
import { listEndpoints } from "./handlers/list-endpoints.ts";
import { publishGateEvents } from "./handlers/publish-gate-events.ts";
import { publishCreditEvents } from "./handlers/publish-credit-events.ts";
import { publishThresholdCrossings } from "./handlers/publish-threshold-crossings.ts";
import { rotateEndpointSecret } from "./handlers/rotate-endpoint-secret.ts";
import { testEndpoint } from "./handlers/test-endpoint.ts";
import { updateEndpoint } from "./handlers/update-endpoint.ts";
import { JobScheduler } from "@meter/lib/jobs";
import { collectionBacklog, seriesAtZero, trackJobQueue, webhookDeliveries } from "@meter/lib/metrics";
import { MAX_ATTEMPTS } from "./domain/events.ts";
import { DEFAULT_DISPATCH_LIMITS, Dispatcher, type DispatchLimits } from "./flows/dispatcher.ts";
import { defineRetention, runWebhooksRetention, scheduleRetention, type WebhooksRetentionReport } from "./jobs/retention.ts";
import { defineSummaryProduct } from "./jobs/summary-product.ts";
import { defineSummarySchedules, fanOutSummaries, scheduleSummaries } from "./jobs/summary-schedule.ts";
import type { SummaryType } from "./domain/summary-windows.ts";
import { DEVELOPMENT_SECRET_KEY, SecretBox } from "./domain/secrets.ts";
import { resealSecrets } from "./flows/reseal.ts";

/** How often the endpoints' signing secrets are checked against the keys, and sealed again where a previous key sealed them. */
const RESEAL_EVERY_MS = 10 * 60_000;
import { WebhookSender } from "./adapters/sender.ts";
import { ClaimStore } from "./store/claims.ts";
import { DeliveryStore } from "./store/deliveries.ts";
import { EndpointStore } from "./store/endpoints.ts";
import { EventStore } from "./store/events.ts";
import { attemptEntry, QueueStore } from "./store/queue.ts";

export interface WebhooksServiceOptions {
  db: Db;
  logger: Logger;
  peers: PeerUrls;
  /** AES-256-GCM key (32 bytes) sealing signing secrets at rest; a public development key when unset. */
  secretKey?: Buffer;
  /** Keys secretKey replaced (WEBHOOKS_SECRET_KEY_PREVIOUS): they still open, and start() re-seals with secretKey. */
  previousSecretKeys?: Buffer[];
  /** How often the signing secrets are checked against the keys after start (10 minutes). */
  resealEveryMs?: number;
  /** Allows http and loopback endpoint URLs (local use and tests). Default false. */
  allowInsecureUrls?: boolean;
  /** Per-attempt timeout; the contract says 10 s. */
  attemptTimeoutMs?: number;
  /** Multiplies the retry table's delays (and summary retries). 1 in production; tests shrink it. */
  timeScale?: number;
  /** How often the dispatcher reads the delivery queue for work of other replicas. Default 2 s. */
  processEveryMs?: number;
  /** How often the job scheduler scans for jobs other replicas scheduled (lib/src/jobs.ts). Default 30 000. */
  idlePollMaxMs?: number;
  /** Caps of the delivery dispatcher (README, "No noisy neighbours"); defaults in flows/dispatcher.ts. */
  dispatch?: Partial<DispatchLimits>;
  /** Coalescing window of identical gate events. Default 10 minutes. */
  gateWindowMs?: number;
  /** The analytics peer; defaults to a gRPC client of peers.analytics. */
  analytics?: AnalyticsPort;
  /** Days the delivery log and its events are kept (README, "Retention"). Default 30. */
  logDays?: number;
  /** Whether start() runs the job worker and the summary schedules. Default true. */
  runJobs?: boolean;
  now?: () => Date;
}

export interface WebhooksModule extends ServiceModule {
  /** Runs one summary fan-out for the period before `now` (what the 06:00 UTC schedule does). */
  triggerSummaries(type: SummaryType, now: Date): Promise<number>;
  /** One retention pass as of `now` (what the daily job does; tests, bench). */
  runRetention(now?: Date): Promise<WebhooksRetentionReport>;
}

/** The webhooks service: endpoints, signed deliveries with retries, events and summaries. */
export async function createWebhooksService(opts: WebhooksServiceOptions): Promise<WebhooksModule> {
  const now = opts.now ?? (() => new Date());
  const urlPolicy = { allowInsecure: opts.allowInsecureUrls ?? false };
  const attemptTimeoutMs = opts.attemptTimeoutMs ?? 10_000;
  if (!opts.secretKey) opts.logger.warn("WEBHOOKS_SECRET_KEY is unset: signing secrets are sealed with the public development key");
  // Outcomes at 0 from the start (the alert on failed deliveries compares them).
  seriesAtZero(webhookDeliveries, { outcome: "failed", attempt: String(MAX_ATTEMPTS) });
  seriesAtZero(webhookDeliveries, { outcome: "success", attempt: "1" });
  const deps: WebhooksDeps = {
    endpoints: new EndpointStore(opts.db),
    events: new EventStore(opts.db),
    deliveries: new DeliveryStore(opts.db),
    claims: new ClaimStore(opts.db),
    queue: new QueueStore(opts.db),
    dispatch: (entries) => dispatcher.add(entries),
    scheduler: new JobScheduler(opts.db, opts.logger, opts.idlePollMaxMs ?? 30_000, "webhooks"),
    sender: new WebhookSender(urlPolicy, attemptTimeoutMs, now),
    secrets: new SecretBox(opts.secretKey ?? DEVELOPMENT_SECRET_KEY, opts.previousSecretKeys ?? []),
    analytics: opts.analytics ?? analyticsAdapter(opts.peers.analytics),
    urlPolicy,
    logger: opts.logger,
    timeScale: opts.timeScale ?? 1,
    gateWindowMs: opts.gateWindowMs ?? 10 * 60_000,
    attemptTimeoutMs,
    logDays: opts.logDays ?? 30,
    now,
  };
  const dispatcher = new Dispatcher(deps, { ...DEFAULT_DISPATCH_LIMITS, ...opts.dispatch }, opts.processEveryMs ?? 2_000);
  await Promise.all([deps.endpoints.init(), deps.events.init(), deps.deliveries.init(), deps.claims.init(), deps.queue.init(), deps.scheduler.init()]);
  trackJobQueue("webhooks_deliveries", collectionBacklog(deps.queue.col, "due_at", () => ({ due_at: { $lte: new Date() } })));
  defineSummaryProduct(deps);
  defineSummarySchedules(deps);
  defineRetention(deps);
  const runJobs = opts.runJobs ?? true;
  let resealTimer: NodeJS.Timeout | undefined;

  return {
    name: "webhooks",
    serviceName: WebhooksService.typeName,
    routes(router) {
      router.service(WebhooksService, {
        createEndpoint: createEndpoint(deps),
        listEndpoints: listEndpoints(deps),
        getEndpointSecret: getEndpointSecret(deps),
        updateEndpoint: updateEndpoint(deps),
        deleteEndpoint: deleteEndpoint(deps),
        rotateEndpointSecret: rotateEndpointSecret(deps),
        testEndpoint: testEndpoint(deps),
        listDeliveries: listDeliveries(deps),
        publishThresholdCrossings: publishThresholdCrossings(deps),
        publishGateEvents: publishGateEvents(deps),
        publishCreditEvents: publishCreditEvents(deps),
      });
    },
    healthy: () => pingDb(opts.db),
    async start() {
      // In the background: a start never waits on every endpoint of every product. Again every
      // RESEAL_EVERY_MS: secrets sealed meanwhile by a replica on an older key configuration
      // (a rotation's rollout) are sealed again, and the gauge follows secrets rotated since.
      const pass = () => void resealSecrets(deps).catch((err: unknown) => opts.logger.error({ err }, "checking the endpoints' signing secrets against the keys failed"));
      pass();
      resealTimer = setInterval(pass, opts.resealEveryMs ?? RESEAL_EVERY_MS);
      resealTimer.unref();
      if (!runJobs) return;
      await queuePendingDeliveries(deps);
      await deps.scheduler.start();
      await scheduleSummaries(deps);
      await scheduleRetention(deps);
      dispatcher.start();
    },
    async stop() {
      clearInterval(resealTimer);
      // An attempt still in flight after the grace is cut off unrecorded (SenderClosedError), its
      // claim released: the next pick, here after a restart or on another replica, sends it again.
      const grace = Math.min(attemptTimeoutMs + 5_000, BACKGROUND_STOP_GRACE_MS);
      await Promise.all([dispatcher.stop(grace), deps.scheduler.stop(grace)]);
      await deps.sender.close();
    },
    triggerSummaries: (type, at) => fanOutSummaries(deps, type, at),
    runRetention: (at = now()) => runWebhooksRetention(deps, at),
  };
}
/**
 * Gives every pending delivery a queue entry (existing entries are kept): deliveries made
 * before the queue existed were scheduled as Agenda jobs ("webhooks.deliver-attempt"), which
 * are removed here, and this also repairs an entry lost to a hand edit of the database.
 */
async function queuePendingDeliveries(deps: WebhooksDeps): Promise<void> {
  const pending = await deps.deliveries.pending();
  await deps.queue.put(pending.map((d) => attemptEntry(d.product_id, d.endpoint_id, d._id, d.next_attempt_at ?? deps.now())));
  await deps.scheduler.agenda.cancel({ name: "webhooks.deliver-attempt" });
}

export { allInOneWebhooksSettings, allowDevelopmentKeyField, secretKeyProblem, webhooksSettings, webhooksSettingsFields } from "./config.ts";
