import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService, UsageEvent } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError, type FieldIssue } from "@meter/lib/errors";
import { refusedTimestamps } from "@meter/lib/metrics";
import { timestampDate, usageTimestampProblem } from "@meter/lib/time";
import type { KnownUser } from "../adapters/plans.ts";
import { addDollars, normalizeModel, roundDollars } from "@meter/rules";
import { encodeMetadata } from "../domain/field-keys.ts";
import type { IngestionDeps } from "../deps.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";
import { notice } from "../late-changes/follow.ts";
import { attribute, attributionFields } from "../domain/attribution.ts";
import { storeUsage } from "../exactly-once/write.ts";
import { windowShares } from "../windows/shares.ts";
import { LEASE_ID } from "../leases/request.ts";
import { MAX_EVENT_TOKENS, MAX_EVENT_TOTAL_TOKENS } from "@meter/lib/event-bounds";
import { BatchProblems, boundCounters, checkBatchSize, checkIds, firstOccurrences, nonNegative, tokensWithin } from "./common.ts";

/** Longest description of an event (as of a manual one). */
const DESCRIPTION_MAX = 2000;

/**
 * Accepted timestamps: what analytics' rollups reach (so every event accepted counts there) to
 * a small skew into the future; the batch is refused whole, each event named (422).
 */
function checkTimestamps(events: readonly UsageEvent[], now: Date): void {
  const issues: FieldIssue[] = [];
  events.forEach((e, i) => {
    const bound = e.timestamp ? usageTimestampProblem(timestampDate(e.timestamp), now) : null;
    if (!bound) return;
    refusedTimestamps.inc({ bound: bound.bound });
    issues.push({ path: `/${i}/timestamp`, message: bound.message });
  });
  if (issues.length > 0) throw rpcError.invalidFields(issues);
}

function validate(events: readonly UsageEvent[]): void {
  const problems = new BatchProblems();
  events.forEach((e, i) => {
    checkIds(problems, i, e);
    if (e.leaseId !== undefined && !LEASE_ID.test(e.leaseId)) problems.add(i, "lease_id", "must be 1-64 letters, digits, _ or -");
    if (e.source !== undefined && e.source !== "auto" && e.source !== "manual") problems.add(i, "source", "must be auto or manual");
    if (e.description !== undefined && e.description.length > DESCRIPTION_MAX) {
      problems.add(i, "description", `must be at most ${DESCRIPTION_MAX} characters`);
    }
    tokensWithin(problems, i, {
      input_tokens: [e.inputTokens, MAX_EVENT_TOKENS],
      output_tokens: [e.outputTokens, MAX_EVENT_TOKENS],
      total_tokens: [e.totalTokens, MAX_EVENT_TOTAL_TOKENS],
    });
    nonNegative(problems, i, {
      cost_tokens: e.costTokens,
      cost_tools: e.costTools,
      cost_total: e.costTotal,
    });
  });
  problems.throwIfAny();
}

/**
 * A usage event as stored. Defaults of the contract: total_tokens is input + output when
 * not sent, cost_total is cost_tokens + cost_tools when not sent. The model name is
 * normalized against the plan in force, as the client library does.
 */
export function usageDoc(productId: string, job: string, e: UsageEvent, user: KnownUser | undefined, receivedAt: Date): UsageEventDoc {
  const timestamp = timestampDate(e.timestamp!);
  const a = attribute(productId, e.userId, user, timestamp);
  const model = e.model ? normalizeModel(e.model, a.plan?.pricing ?? null) : null;
  // int64 fields arrive as bigint; validate() kept token counts to MAX_EVENT_TOKENS.
  const input = Number(e.inputTokens);
  const output = Number(e.outputTokens);
  const doc: UsageEventDoc = {
    _id: `${productId}/${e.id}`,
    product_id: productId,
    event_id: e.id,
    user_id: e.userId,
    user_known: !!user,
    session_id: e.sessionId ?? null,
    timestamp,
    model,
    input_tokens: input,
    output_tokens: output,
    total_tokens: Number(e.totalTokens) || input + output,
    tool_calls: e.toolCalls,
    tool_call_count: e.toolCalls.length,
    // The client's costs, rounded to the nano-dollar once here (money.ts).
    cost_tokens: roundDollars(e.costTokens),
    cost_tools: roundDollars(e.costTools),
    cost_total: roundDollars(e.costTotal) || addDollars(e.costTokens, e.costTools),
    metadata: encodeMetadata(e.metadata),
    // A client's own record of a manual entry counts as a manual event, as POST /events does.
    source: e.source === "manual" ? "manual" : "auto",
    description: e.description ?? null,
    job,
    ...attributionFields(a),
    received_at: receivedAt,
    lease_id: e.leaseId ?? null,
  };
  const windows = windowShares(a.plan, a.period, doc, receivedAt);
  if (windows) doc.windows = windows;
  return doc;
}

export function ingestUsageEvents(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["ingestUsageEvents"] {
  return async (req) => {
    const productId = req.productId;
    checkBatchSize(deps, req.events.length);
    validate(req.events);
    checkTimestamps(req.events, deps.now());
    const { unique, repeated } = firstOccurrences(req.events);
    if (unique.length === 0) return { accepted: 0, duplicates: repeated };
    // Events of unregistered users are stored and counted too (calendar month, no plan).
    const users = await deps.users.resolve(productId, unique.map((e) => e.userId));
    const now = deps.now();
    const job = `job_${randomUUID()}`;
    const docs = unique.map((e) => usageDoc(productId, job, e, users.get(e.userId), now));
    const index = new Map(req.events.map((e, i) => [e, i]));
    const at = new Map(docs.map((d, k) => [d, index.get(unique[k]!)!]));
    await boundCounters(deps, docs, users, (d) => `/${at.get(d)}/total_tokens`);
    const ids = docs.map((d) => d._id);
    const inserted = await storeUsage(deps, { _id: job, kind: "usage", product_id: productId, ids, created_at: now }, docs);
    await notice(deps, productId, users);
    const unknown = docs.filter((d) => inserted.has(d._id) && !d.user_known).length;
    if (unknown > 0) deps.logger.info({ productId, events: unknown }, "stored events of unregistered users");
    return { accepted: inserted.size, duplicates: repeated + docs.length - inserted.size };
  };
}
