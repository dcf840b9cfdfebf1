import { characters } from "@meter/lib/characters";
import { createHash, randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { CreateManualEventRequest, IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import { toTimestamp } from "@meter/lib/time";
import { price } from "@meter/rules";
import { encodeMetadata } from "../domain/field-keys.ts";
import type { IngestionDeps } from "../deps.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";
import { analyticsTeam, attribute, attributeTeam, attributionFields } from "../domain/attribution.ts";
import { addTeamShare } from "../teams/shares.ts";
import { MAX_EVENT_TOKENS } from "@meter/rules";
import { recordUsage } from "../usage/record.ts";
import { windowShares } from "../windows/shares.ts";
import { requireUser } from "./common.ts";

const MAX_KEY = 255;

function validate(req: CreateManualEventRequest): void {
  if (req.cost !== undefined && (!Number.isFinite(req.cost) || req.cost < 0)) throw rpcError.invalid("cost must be >= 0");
  const tokens = { input_tokens: req.inputTokens, output_tokens: req.outputTokens };
  const outside = Object.entries(tokens).filter(([, n]) => n < 0n || n > BigInt(MAX_EVENT_TOKENS));
  if (outside.length > 0) {
    throw rpcError.invalidFields(outside.map(([field]) => ({ path: `/${field}`, message: `must be a whole number of tokens from 0 to ${MAX_EVENT_TOKENS}` })));
  }
  if (req.idempotencyKey !== undefined && (req.idempotencyKey.length === 0 || characters(req.idempotencyKey) > MAX_KEY)) {
    throw rpcError.invalid(`idempotency_key must be 1-${MAX_KEY} characters`);
  }
}

/** A repeated idempotency key finds the same primary key, so the first event is the one kept. */
function manualId(productId: string, eventId: string, key: string | undefined): string {
  return key === undefined
    ? `${productId}/${eventId}`
    : `${productId}/idem/${createHash("sha256").update(key).digest("hex")}`;
}

function toManualEvent(doc: UsageEventDoc) {
  return {
    id: doc.event_id,
    userId: doc.user_id,
    cost: doc.cost_total,
    model: doc.model ?? undefined,
    source: doc.source,
    createdAt: toTimestamp(doc.received_at),
  };
}

/**
 * A manual event is a usage event stamped now, priced by the cost rules, counted like a
 * batch event (spend, usage, thresholds, analytics). The user must be registered.
 */
export function createManualEvent(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["createManualEvent"] {
  return async (req) => {
    const productId = req.productId;
    validate(req);
    const user = await requireUser(deps, productId, req.userId);
    const now = deps.now();
    const input = Number(req.inputTokens);
    const output = Number(req.outputTokens);
    const eventId = `evt_${randomUUID()}`;
    const job = `job_${randomUUID()}`;
    const _id = manualId(productId, eventId, req.idempotencyKey);
    const a = attribute(productId, req.userId, user, now);
    const team = attributeTeam(productId, user, now);
    // A member without a plan of its own is priced at its team plan's rates. Neither a cost nor
    // tokens and a model (a model alone, tokens alone, tool calls alone): an audit entry at zero
    // cost (SPEC), its tokens and tool calls counted but not priced.
    const audit = req.cost === undefined && !(req.model && input + output > 0);
    const cost = price(req.model, input, output, req.toolCalls, (a.plan ?? team?.plan)?.pricing ?? null, audit ? 0 : req.cost);
    const metadata = { ...(req.metadata ?? {}) };
    if (req.idempotencyKey !== undefined) metadata.idempotency_key = req.idempotencyKey;
    const doc: UsageEventDoc = {
      _id,
      product_id: productId,
      event_id: eventId,
      user_id: req.userId,
      user_known: true,
      session_id: req.sessionId ?? null,
      timestamp: now,
      model: cost.model,
      input_tokens: input,
      output_tokens: output,
      total_tokens: input + output,
      tool_calls: req.toolCalls,
      tool_call_count: req.toolCalls.length,
      cost_tokens: cost.cost_tokens,
      cost_tools: cost.cost_tools,
      cost_total: cost.cost_total,
      metadata: encodeMetadata(metadata),
      source: "manual",
      description: req.description ?? null,
      job,
      ...attributionFields(a),
      ...analyticsTeam(user, now),
      received_at: now,
    };
    const windows = windowShares(a.plan, a.period, doc, now);
    if (windows) doc.windows = windows;
    addTeamShare(doc, team, req.model ?? null, now);
    // A replay of a key whose first attempt was interrupted completes that attempt's job.
    const usageJob = { _id: job, kind: "usage" as const, product_id: productId, ids: [_id], created_at: now };
    const inserted = await recordUsage(deps, usageJob, [doc], new Map([[req.userId, user]]), () => "/input_tokens");
    const stored = inserted.has(_id) ? doc : await deps.events.get(_id);
    if (!stored) throw rpcError.unavailable("the event was not stored; retry the request");
    return { event: toManualEvent(stored), created: inserted.has(_id) };
  };
}
