import { randomUUID } from "node:crypto";
import { GATE_REASON_HINT, GATE_REASON_PATTERN } from "@meter/lib/gate-reasons";
import type { ServiceImpl } from "@connectrpc/connect";
import type { GateEvent, IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError, type FieldIssue } from "@meter/lib/errors";
import { timestampDate } from "@meter/lib/time";
import { MAX_GATE_FIGURE, metricOfReason, roundDollars, roundRatio } from "@meter/rules";
import { encodeMetadata } from "../domain/field-keys.ts";
import type { IngestionDeps } from "../deps.ts";
import type { GateEventDoc } from "../store/gate-events.ts";
import { storeGates } from "../exactly-once/write.ts";
import { analyticsTeam, attribute, attributeTeam } from "../domain/attribution.ts";
import type { KnownUser } from "../adapters/plans.ts";
import { BatchProblems, checkIds, firstOccurrences, nonNegative } from "./common.ts";
import { canonicalUuid } from "@meter/lib/uuids";

const STATUSES = new Set(["soft_gate", "hard_gate"]);
const REASON = new RegExp(GATE_REASON_PATTERN);

/** Refuses a batch whole: larger than `maxEvents` (413); any field out of its bounds, each event and field named (422). */
function validate(events: readonly GateEvent[], maxEvents: number): void {
  if (events.length > maxEvents) {
    throw rpcError.tooLarge(`batch of ${events.length} events is larger than the ${maxEvents} accepted; split it into smaller batches`);
  }
  const problems = new BatchProblems();
  events.forEach((e, i) => {
    checkIds(problems, i, e);
    if (!STATUSES.has(e.status)) problems.add(i, "status", "must be soft_gate or hard_gate");
    // A soft gate lets the call run: announced as blocked, it would send gate_event.blocked for a call that ran.
    else if (e.blocked && e.status !== "hard_gate") problems.add(i, "blocked", "is true only for a hard_gate (a soft gate never blocks the call)");
    if (!REASON.test(e.gateReason)) problems.add(i, "gate_reason", GATE_REASON_HINT);
    nonNegative(problems, i, { usage_pct: e.usagePct, current_value: e.currentValue, limit_value: e.limitValue }, MAX_GATE_FIGURE);
  });
  problems.throwIfAny();
}

/** How far ahead of the service's clock a gate event may be stamped (clients' clocks drift). */
export const GATE_EVENT_FUTURE_SKEW_MS = 15 * 60_000;
const DAY = 86_400_000;

/**
 * Accepted timestamps: the listing's reach into the past (gate events are kept
 * INGESTION_GATE_EVENT_DAYS) and a small skew into the future. Each distinct hour of a batch
 * is a bucket to write and a page to read, so without a window one batch could spread over
 * 10,000 hours.
 */
function checkWindow(events: readonly GateEvent[], now: Date, days: number): void {
  const earliest = now.getTime() - days * DAY;
  const latest = now.getTime() + GATE_EVENT_FUTURE_SKEW_MS;
  const issues: FieldIssue[] = [];
  events.forEach((e, i) => {
    const t = timestampDate(e.timestamp!).getTime();
    if (t < earliest) issues.push({ path: `/${i}/timestamp`, message: `is more than ${days} days ago; gate events are kept ${days} days` });
    else if (t > latest) issues.push({ path: `/${i}/timestamp`, message: `is more than ${GATE_EVENT_FUTURE_SKEW_MS / 60_000} minutes ahead of the service's clock` });
  });
  if (issues.length > 0) throw rpcError.invalidFields(issues);
}

const LIMIT_REASON = /^(team:)?limit:(.+)$/;

/**
 * Whether a gate's figures are dollars: a spend cap of the user's own or of its team
 * (`team:total_spend`), or a plan limit (`limit:<name>`, `team:limit:<name>`) that the plan in
 * force at `t` (the user's, or its team's then) counts in spend. A limit the plan no longer
 * names keeps its figures as sent.
 */
function moneyFigures(productId: string, reason: string, user: KnownUser | undefined, t: Date): boolean {
  const metric = metricOfReason(reason);
  if (metric !== undefined) return metric === "spend";
  const m = LIMIT_REASON.exec(reason);
  if (!m || !user) return false;
  const plan = m[1] ? attributeTeam(productId, user, t)?.plan : attribute(productId, user.externalUserId, user, t).plan;
  return plan?.limits.find((l) => l.name === m[2])?.metric === "spend";
}

/**
 * A gate event as stored. A client's figures are rounded once here, usage_pct to 1e-6 and
 * amounts of a spend cap or limit to the nano-dollar (money in @meter/rules), so that no stored or
 * forwarded value carries float noise (1.0499999999999998 is stored as 1.05).
 */
function gateDoc(productId: string, job: string, e: GateEvent, user: KnownUser | undefined, receivedAt: Date): GateEventDoc {
  const timestamp = timestampDate(e.timestamp!);
  const money = moneyFigures(productId, e.gateReason, user, timestamp);
  return {
    _id: `${productId}/${e.id}`,
    product_id: productId,
    event_id: e.id,
    user_id: e.userId,
    service_user_id: e.serviceUserId ?? null,
    session_id: e.sessionId ?? null,
    timestamp,
    status: e.status as GateEventDoc["status"],
    gate_reason: e.gateReason,
    usage_pct: roundRatio(e.usagePct),
    current_value: money ? roundDollars(e.currentValue) : e.currentValue,
    limit_value: money ? roundDollars(e.limitValue) : e.limitValue,
    model: e.model ?? null,
    blocked: e.blocked,
    message: e.message ?? null,
    metadata: encodeMetadata(e.metadata),
    received_at: receivedAt,
    job,
    // Analytics counts the gate for the team the user was in at the event's time.
    ...analyticsTeam(user, timestamp),
  };
}

/** Stores gate events idempotently; the outbox flags hand each new one to webhooks and analytics. */
export function ingestGateEvents(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["ingestGateEvents"] {
  return async (req) => {
    const productId = req.productId;
    // One spelling of a UUID id (case, urn:uuid:), so that a resend spelled otherwise is a duplicate.
    for (const e of req.events) e.id = canonicalUuid(e.id);
    validate(req.events, deps.limits.maxBatchEvents);
    const now = deps.now();
    checkWindow(req.events, now, deps.retention.gateEventDays);
    const { unique, repeated } = firstOccurrences(req.events);
    if (unique.length === 0) return { accepted: 0, duplicates: repeated };
    const job = `job_${randomUUID()}`;
    const users = await deps.users.resolve(productId, unique.map((e) => e.userId));
    const docs = unique.map((e) => gateDoc(productId, job, e, users.get(e.userId), now));
    const ids = docs.map((d) => d._id);
    const inserted = await storeGates(deps, { _id: job, kind: "gate", product_id: productId, ids, created_at: now }, docs);
    return { accepted: inserted.size, duplicates: repeated + unique.length - inserted.size };
  };
}
