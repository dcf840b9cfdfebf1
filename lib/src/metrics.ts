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

export const httpRequests = new Counter({
  name: "meter_http_requests_total",
  help: "HTTP requests answered by the gateway, by method, route template and status.",
  labelNames: ["method", "route", "status"] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: "meter_http_request_duration_seconds",
  help: "Time to answer an HTTP request at the gateway, by method, route template and status.",
  labelNames: ["method", "route", "status"] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const rpcRequests = new Counter({
  name: "meter_rpc_requests_total",
  help: "RPCs answered by a service, by service, method and Connect code.",
  labelNames: ["service", "method", "code"] as const,
  registers: [registry],
});

export const rpcDuration = new Histogram({
  name: "meter_rpc_request_duration_seconds",
  help: "Time to answer an RPC, by service, method and Connect code.",
  labelNames: ["service", "method", "code"] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const ingestedEvents = new Counter({
  name: "meter_ingestion_events_total",
  help: "Events received by ingestion, by kind (usage, gate) and result (accepted, duplicate).",
  labelNames: ["kind", "result"] as const,
  registers: [registry],
});

export const webhookDeliveries = new Counter({
  name: "meter_webhook_deliveries_total",
  help: "Webhook delivery attempts, by outcome (success, retry, failed) and attempt number.",
  labelNames: ["outcome", "attempt"] as const,
  registers: [registry],
});

/** What a backlog gauge reads at scrape time: how many items wait, and since when the oldest. */
export interface BacklogProbe {
  (): Promise<{ depth: number; oldest: Date | null }>;
}

const outboxes = new Map<string, BacklogProbe>();
const jobQueues = new Map<string, BacklogProbe>();

/**
 * Backlogs are read from the database at scrape time (they live there, shared by replicas);
 * a probe that fails (database down, service stopped) leaves its series out of that scrape.
 */
async function readBacklogs(probes: Map<string, BacklogProbe>, depth: Gauge<"name"> | null, age: Gauge<"name">) {
  depth?.reset();
  age.reset();
  const now = Date.now();
  await Promise.all(
    [...probes].map(async ([name, probe]) => {
      try {
        const b = await probe();
        depth?.set({ name }, b.depth);
        age.set({ name }, b.oldest ? Math.max(0, (now - b.oldest.getTime()) / 1000) : 0);
      } catch {
        // left out of this scrape
      }
    }),
  );
}

const outboxDepth = new Gauge({
  name: "meter_outbox_depth",
  help: "Entries waiting in an outbox for a peer's acknowledgement, by outbox.",
  labelNames: ["name"] as const,
  registers: [registry],
});

new Gauge({
  name: "meter_outbox_oldest_age_seconds",
  help: "Age of the oldest entry waiting in an outbox (0 when empty), by outbox.",
  labelNames: ["name"] as const,
  registers: [registry],
  async collect() {
    await readBacklogs(outboxes, outboxDepth, this);
  },
});

new Gauge({
  name: "meter_job_lag_seconds",
  help: "How long the most overdue job of a queue has been due without being picked up (0 when none), by queue.",
  labelNames: ["name"] as const,
  registers: [registry],
  async collect() {
    await readBacklogs(jobQueues, null, this);
  },
});

/** Reports an outbox's depth and age on every scrape. A later probe of the same name replaces it. */
export function trackOutbox(name: string, probe: BacklogProbe): void {
  outboxes.set(name, probe);
}

/** Reports a job queue's lag on every scrape. A later probe of the same name replaces it. */
export function trackJobQueue(name: string, probe: BacklogProbe): void {
  jobQueues.set(name, probe);
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
