import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService, UsageEvent } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { characters } from "@meter/lib/characters";
import { rpcError, type FieldIssue } from "@meter/lib/errors";
import { refusedTimestamps } from "@meter/lib/metrics";
import { timestampDate, usageTimestampProblem } from "@meter/lib/time";
import type { IngestionDeps } from "../deps.ts";
import { ingestUsageBatch } from "../usage/record.ts";
import { LEASE_ID } from "../leases/request.ts";
import { MAX_EVENT_TOKENS, MAX_EVENT_TOTAL_TOKENS, toDollars, toNano } from "@meter/rules";
import { BatchProblems, checkIds, firstOccurrences, nonNegative, tokensWithin } from "./common.ts";
import { canonicalUuid } from "@meter/lib/uuids";

/** Longest description of an event (as of a manual one). */
const DESCRIPTION_MAX = 2000;

/**
 * Refuses a batch whole: larger than `maxEvents` (413); any field out of its bounds, each
 * event and field named (422); a timestamp outside what is accepted (422), i.e. before what
 * analytics' rollups reach (so every event accepted counts there) or past a small skew into
 * the future.
 */
function validate(events: readonly UsageEvent[], maxEvents: number, now: Date): void {
  if (events.length > maxEvents) {
    throw rpcError.tooLarge(`batch of ${events.length} events is larger than the ${maxEvents} accepted; split it into smaller batches`);
  }
  const problems = new BatchProblems();
  events.forEach((e, i) => {
    checkIds(problems, i, e);
    if (e.leaseId !== undefined && !LEASE_ID.test(e.leaseId)) problems.add(i, "lease_id", "must be 1-64 letters, digits, _ or -");
    if (e.source !== undefined && e.source !== "auto" && e.source !== "manual") problems.add(i, "source", "must be auto or manual");
    if (e.description !== undefined && characters(e.description) > DESCRIPTION_MAX) {
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
    costAddsUp(problems, i, e);
  });
  problems.throwIfAny();
  const issues: FieldIssue[] = [];
  events.forEach((e, i) => {
    const bound = usageTimestampProblem(timestampDate(e.timestamp!), now);
    if (!bound) return;
    refusedTimestamps.inc({ bound: bound.bound });
    issues.push({ path: `/${i}/timestamp`, message: bound.message });
  });
  if (issues.length > 0) throw rpcError.invalidFields(issues);
}

/**
 * cost_total is cost_tokens + cost_tools (SPEC.md): sent with its parts, it must equal their
 * sum (to the nano-dollar each part is rounded to), or the spend counted would be a figure the
 * event contradicts. Sent alone (parts 0), it is the cost; 0 (unset) is the parts' sum.
 */
function costAddsUp(problems: BatchProblems, i: number, e: UsageEvent): void {
  if (!(e.costTotal > 0) || !(e.costTokens > 0 || e.costTools > 0) || !Number.isFinite(e.costTokens + e.costTools)) return;
  const sum = toNano(e.costTokens) + toNano(e.costTools);
  if (Math.abs(toNano(e.costTotal) - sum) > 1) {
    problems.add(i, "cost_total", `must equal cost_tokens + cost_tools (${toDollars(sum)}), or be left out (0) to be their sum`);
  }
}

/** Validates a batch and hands its first occurrences to the usage write path (usage/record.ts). */
export function ingestUsageEvents(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["ingestUsageEvents"] {
  return async (req) => {
    // One spelling of a UUID id (case, urn:uuid:), so that a resend spelled otherwise is a duplicate.
    for (const e of req.events) e.id = canonicalUuid(e.id);
    validate(req.events, deps.limits.maxBatchEvents, deps.now());
    const { unique, repeated } = firstOccurrences(req.events);
    if (unique.length === 0) return { accepted: 0, duplicates: repeated };
    const index = new Map(req.events.map((e, i) => [e, i]));
    const accepted = await ingestUsageBatch(deps, req.productId, unique, (e) => index.get(e)!);
    return { accepted, duplicates: repeated + unique.length - accepted };
  };
}
