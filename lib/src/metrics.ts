import type { Collection, Document, Filter } from "mongodb";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/**
 * The process's Prometheus metrics, served at /metrics by the gateway and by every service
 * port. One registry per process: in all-in-one every service and the gateway share it, so
 * each series carries the labels that tell them apart (`service`, `route`).
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A counter in the process's registry; `labelNames` tell its series apart. */
export function counter<L extends string = string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
  return new Counter({ name, help, labelNames, registers: [registry] });
}

/** A gauge in the process's registry; `labelNames` tell its series apart. */
export function gauge<L extends string = string>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
  return new Gauge({ name, help, labelNames, registers: [registry] });
}

/** A histogram of the time to answer, in seconds, in the process's registry. */
function latency<L extends string>(name: string, help: string, labelNames: readonly L[]): Histogram<L> {
  return new Histogram({ name, help, labelNames, buckets: LATENCY_BUCKETS, registers: [registry] });
}

export const httpRequests = counter(
  "meter_http_requests_total",
  "HTTP requests answered by the gateway, by method, route template and status.",
  ["method", "route", "status"],
);

export const httpConnectionsRefused = counter(
  "meter_http_connections_closed_total",
  "Connections the gateway refused or closed to protect its file handles: per_address and total caps, slow_body deadline.",
  ["reason"],
);

export const httpDuration = latency(
  "meter_http_request_duration_seconds",
  "Time to answer an HTTP request at the gateway, by method, route template and status.",
  ["method", "route", "status"],
);

export const ignoredFields = counter(
  "meter_http_ignored_fields_total",
  "Fields of ingested events the gateway does not know and ignored, by route template.",
  ["route"],
);

export const rpcRequests = counter(
  "meter_rpc_requests_total",
  "RPCs answered by a service, by service, method and Connect code.",
  ["service", "method", "code"],
);

export const rpcDuration = latency(
  "meter_rpc_request_duration_seconds",
  "Time to answer an RPC, by service, method and Connect code.",
  ["service", "method", "code"],
);

export const ingestedEvents = counter(
  "meter_ingestion_events_total",
  "Events received by ingestion, by kind (usage, gate) and result (accepted, duplicate).",
  ["kind", "result"],
);

export const ingestionInFlight = gauge(
  "meter_ingestion_in_flight_events",
  "Events of ingestion batches this process has taken on and not yet stored (INGESTION_MAX_EVENTS_IN_FLIGHT bounds it).",
);

export const batchBytesInFlight = gauge(
  "meter_http_batch_bytes_in_flight",
  "Bytes of usage and gate batch bodies this gateway has admitted and not yet answered (GATEWAY_BATCH_BYTES_IN_FLIGHT bounds it).",
);

export const ingestionBusyRefusals = counter(
  "meter_ingestion_busy_refusals_total",
  "Ingestion batches refused (429 with Retry-After) because the process held INGESTION_MAX_EVENTS_IN_FLIGHT events already.",
  ["kind"],
);

export const userCacheReads = counter(
  "meter_plans_cache_reads_total",
  "Users and teams the plans service read, by where the answer came from (memory, database) and reads made in the background ahead of an entry's time (ahead).",
  ["source"],
);

export const refusedTimestamps = counter(
  "meter_usage_events_refused_timestamp_total",
  "Usage events refused for a timestamp out of bounds, by bound (too_old: before the analytics rollup retention; future: beyond the clock skew allowed).",
  ["bound"],
);

export const uncountedFacts = counter(
  "meter_analytics_uncounted_facts_total",
  "Facts analytics acknowledged without counting them, by reason (before_rollup_retention: their day's rollup is no longer kept).",
  ["reason"],
);

/** Ingestion jobs the recovery sweep failed to complete too often and now passes by. */
export const quarantinedJobs = counter(
  "meter_ingestion_jobs_quarantined_total",
  "Unfinished ingestion jobs the recovery sweep set aside after failing to complete them repeatedly, by kind (usage, gate).",
  ["kind"],
);

/**
 * 1 for each service this process serves (the gateway among them), from when it serves: a series
 * every scrape of it has, whatever its traffic, so that a service whose metrics stop reaching
 * Prometheus shows as absent (deploy/prometheus/meter-alerts.yaml, MeterServiceNotScraped).
 */
export const servedServices = gauge("meter_service_up", "1 for each service this process serves (gateway, tenancy, plans, ingestion, analytics, webhooks), from when it serves.", ["service"]);

/** What the webhooks service's last start found of the stored signing secrets against its keys (flows/reseal.ts). */
export const webhookSecrets = gauge(
  "meter_webhook_secrets",
  "Endpoints' signing secrets at this process's last start, by the key that opens them: current, previous (WEBHOOKS_SECRET_KEY_PREVIOUS only: drop it at 0), none (their deliveries fail).",
  ["key"],
);

export const webhookDeliveries = counter(
  "meter_webhook_deliveries_total",
  "Webhook delivery attempts, by outcome (success, retry, failed) and attempt number.",
  ["outcome", "attempt"],
);

/**
 * Runs of background jobs that failed (they are retried: by Agenda, or by the next repeating
 * run), by job name: a retention pass or a relay failing every time shows here, not only in the
 * logs (alert on a steady increase).
 */
// "task", not "job": Prometheus puts its own job label (the scrape job) on every series.
export const jobFailures = counter("meter_job_failures_total", "Background job runs that failed (retried later), by job name.", ["task"]);

/**
 * Scrapes whose read of a backlog failed (its series are left out of that scrape): an outage
 * silences the backlog gauges, and this says why.
 */
export const backlogReadFailures = counter("meter_backlog_read_failures_total", "Scrapes that could not read a backlog from the database (its gauges left out), by backlog.", ["name"]);

/** What a backlog gauge reads at scrape time: how many items wait, and since when the oldest. */
export interface BacklogProbe {
  (): Promise<{ depth: number; oldest: Date | null }>;
}

interface Backlog {
  depth: number;
  /** Seconds since the oldest waiting item (0 when none). */
  ageSeconds: number;
}

/**
 * Backlogs are read from the database at scrape time (they live there, shared by replicas).
 * The gauges of one backlog are collected concurrently; they share one read per scrape. A
 * probe that fails (database down, service stopped) leaves its series out of that scrape.
 */
function backlogReader(probes: Map<string, BacklogProbe>) {
  let last: { at: number; result: Promise<Map<string, Backlog>> } | undefined;
  const readAll = async () => {
    const out = new Map<string, Backlog>();
    await Promise.all(
      [...probes].map(async ([name, probe]) => {
        try {
          const b = await probe();
          out.set(name, { depth: b.depth, ageSeconds: b.oldest ? Math.max(0, (Date.now() - b.oldest.getTime()) / 1000) : 0 });
        } catch {
          // Left out of this scrape, and counted.
          backlogReadFailures.inc({ name });
        }
      }),
    );
    return out;
  };
  return () => {
    if (!last || Date.now() - last.at > 1_000) last = { at: Date.now(), result: readAll() };
    return last.result;
  };
}

const outboxes = new Map<string, BacklogProbe>();
const setAside = new Map<string, BacklogProbe>();
const jobQueues = new Map<string, BacklogProbe>();
const readOutboxes = backlogReader(outboxes);
const readSetAside = backlogReader(setAside);
const readJobQueues = backlogReader(jobQueues);

function backlogGauge(name: string, help: string, read: () => Promise<Map<string, Backlog>>, field: keyof Backlog) {
  return new Gauge({
    name,
    help,
    labelNames: ["name"] as const,
    registers: [registry],
    async collect() {
      const all = await read();
      this.reset();
      for (const [label, b] of all) this.set({ name: label }, b[field]);
    },
  });
}

backlogGauge("meter_outbox_depth", "Entries waiting in an outbox for a peer's acknowledgement, by outbox.", readOutboxes, "depth");
backlogGauge(
  "meter_outbox_oldest_age_seconds",
  "Age of the oldest entry waiting in an outbox (0 when empty), by outbox.",
  readOutboxes,
  "ageSeconds",
);
backlogGauge(
  "meter_outbox_set_aside",
  "Entries of an outbox set aside after failing every attempt, kept for replay (docs/operations.md, Metrics), by outbox.",
  readSetAside,
  "depth",
);
backlogGauge("meter_job_queue_due", "Jobs due and not yet picked up by a worker, by queue.", readJobQueues, "depth");
backlogGauge(
  "meter_job_lag_seconds",
  "How long the most overdue job of a queue has been due without being picked up (0 when none), by queue.",
  readJobQueues,
  "ageSeconds",
);

/** Reports an outbox's depth and age on every scrape. A later probe of the same name replaces it. */
export function trackOutbox(name: string, probe: BacklogProbe): void {
  outboxes.set(name, probe);
  seriesAtZero(backlogReadFailures, { name });
}

/** Reports how many entries of an outbox are set aside, on every scrape. */
export function trackSetAside(name: string, probe: BacklogProbe): void {
  setAside.set(name, probe);
  seriesAtZero(backlogReadFailures, { name });
}

/** Entries set aside by this process, by outbox (the gauge above counts what is still set aside). */
export const outboxSetAside = counter(
  "meter_outbox_set_aside_total",
  "Outbox entries this process set aside after failing every attempt, by outbox.",
  ["name"],
);

/** Reports a job queue's lag on every scrape. A later probe of the same name replaces it. */
export function trackJobQueue(name: string, probe: BacklogProbe): void {
  jobQueues.set(name, probe);
  seriesAtZero(backlogReadFailures, { name });
}

/**
 * Exports a counter's series at 0 before its first event: a series born at 1 shows no increase()
 * to Prometheus, so an alert on the first quarantine, refusal or failed read would never fire.
 */
export function seriesAtZero<L extends string>(c: Counter<L>, labels: Partial<Record<L, string>>): void {
  c.inc(labels, 0);
}

/**
 * A backlog kept in a collection: the documents matching `waiting()` (all by default), the
 * oldest by `dateField`. Outboxes and job queues are small when healthy, so this stays cheap.
 */
export function collectionBacklog<T extends Document>(
  collection: Collection<T>,
  dateField: string,
  waiting: () => Filter<T> = () => ({}),
): BacklogProbe {
  return async () => {
    const filter = waiting();
    const [depth, first] = await Promise.all([
      collection.countDocuments(filter),
      collection.find(filter, { projection: { [dateField]: 1 } }).sort({ [dateField]: 1 }).limit(1).next(),
    ]);
    const oldest = first ? (first as Document)[dateField] : null;
    return { depth, oldest: oldest instanceof Date ? oldest : null };
  };
}

/** Counts the accepted and duplicate events of an ingestion handler's answers. */
export function countIngested<Req, Ctx, Res extends { accepted?: number; duplicates?: number }>(
  kind: "usage" | "gate",
  handler: (req: Req, ctx: Ctx) => Res | Promise<Res>,
): (req: Req, ctx: Ctx) => Promise<Res> {
  return async (req, ctx) => {
    const res = await handler(req, ctx);
    ingestedEvents.inc({ kind, result: "accepted" }, res.accepted ?? 0);
    ingestedEvents.inc({ kind, result: "duplicate" }, res.duplicates ?? 0);
    return res;
  };
}

export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
