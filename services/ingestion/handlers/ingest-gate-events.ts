import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { GateEvent, IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { timestampDate } from "@meter/lib/time";
import { encodeMetadata } from "../domain/field-keys.ts";
import type { IngestionDeps } from "../deps.ts";
import type { GateEventDoc } from "../store/gate-events.ts";
import { storeGates } from "../usage.ts";
import { BatchProblems, checkBatchSize, checkIds, firstOccurrences, nonNegative, requireProduct } from "./common.ts";

const STATUSES = new Set(["soft_gate", "hard_gate"]);
const REASON = /^(total_spend|session_spend|model_limit:.+)$/;

function validate(events: readonly GateEvent[]): void {
  const problems = new BatchProblems();
  events.forEach((e, i) => {
    checkIds(problems, i, e);
    if (!STATUSES.has(e.status)) problems.add(i, "status", "must be soft_gate or hard_gate");
    if (!REASON.test(e.gateReason)) problems.add(i, "gate_reason", "must be total_spend, session_spend or model_limit:<model>");
    nonNegative(problems, i, { usage_pct: e.usagePct, current_value: e.currentValue, limit_value: e.limitValue });
  });
  problems.throwIfAny();
}

function gateDoc(productId: string, job: string, e: GateEvent, receivedAt: Date): GateEventDoc {
  return {
    _id: `${productId}/${e.id}`,
    product_id: productId,
    event_id: e.id,
    user_id: e.userId,
    service_user_id: e.serviceUserId ?? null,
    session_id: e.sessionId ?? null,
    timestamp: timestampDate(e.timestamp!),
    status: e.status as GateEventDoc["status"],
    gate_reason: e.gateReason,
    usage_pct: e.usagePct,
    current_value: e.currentValue,
    limit_value: e.limitValue,
    model: e.model ?? null,
    blocked: e.blocked,
    message: e.message ?? null,
    metadata: encodeMetadata(e.metadata),
    received_at: receivedAt,
    job,
  };
}

/** Stores gate events idempotently; the outbox flags hand each new one to webhooks and analytics. */
export function ingestGateEvents(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["ingestGateEvents"] {
  return async (req) => {
    const productId = requireProduct(req.productId);
    checkBatchSize(deps, req.events.length);
    validate(req.events);
    const { unique, repeated } = firstOccurrences(req.events);
    const now = deps.now();
    if (unique.length === 0) return { accepted: 0, duplicates: repeated };
    const job = `job_${randomUUID()}`;
    const docs = unique.map((e) => gateDoc(productId, job, e, now));
    const ids = docs.map((d) => d._id);
    const inserted = await storeGates(deps, { _id: job, kind: "gate", product_id: productId, ids, created_at: now }, docs);
    return { accepted: inserted.size, duplicates: repeated + unique.length - inserted.size };
  };
}
