import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { GATE_REASON_PATTERN } from "@meter/lib/gate-reasons";
import { Type, type Static, type TSchema } from "typebox";
import type { FastifyRequest } from "fastify";
import type { CallOptions } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JsonObject } from "@bufbuild/protobuf";
import { DateTime, EventBody, ExternalUserId, LeaseId, Nullable, WELL_FORMED_PATTERN, countIgnoredFields, errors, parseDateTime } from "../schemas/common.ts";
import { MAX_EVENT_TOKENS, MAX_EVENT_TOTAL_TOKENS, MAX_GATE_FIGURE, METADATA_MAX_DEPTH } from "@meter/rules";
import { rpcOptions } from "../rpc-options.ts";

/** Largest batch body accepted (bytes); the ingestion service also caps the event count. */
export const BATCH_BODY_LIMIT = 10 * 1024 * 1024;

/** Largest dollar amount of one event: sums of many stay far from overflowing a double. */
export const MAX_EVENT_COST = 1e12;

const Metadata = Type.Object(
  {},
  { additionalProperties: true, "x-maxDepth": METADATA_MAX_DEPTH, description: `Free-form object, at most ${METADATA_MAX_DEPTH} levels deep; default {}` },
);
const Count = Type.Integer({ minimum: 0, maximum: MAX_EVENT_TOKENS, default: 0 });
const Money = Type.Number({ minimum: 0, maximum: MAX_EVENT_COST, default: 0 });

const UsageEventIn = EventBody(
  {
    id: Type.String({ format: "uuid", description: "Idempotency key" }),
    user_id: ExternalUserId(),
    session_id: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
    timestamp: DateTime,
    model: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
    input_tokens: Type.Optional(Count),
    output_tokens: Type.Optional(Count),
    total_tokens: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_EVENT_TOTAL_TOKENS, description: "Default input_tokens + output_tokens" })),
    tool_calls: Type.Optional(Type.Array(Type.String({ maxLength: 255 }))),
    cost_tokens: Type.Optional(Money),
    cost_tools: Type.Optional(Money),
    cost_total: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_EVENT_COST, description: "Default cost_tokens + cost_tools" })),
    metadata: Type.Optional(Metadata),
    synced: Type.Optional(Type.Boolean({ description: "Client-side flag of the callback form; ignored" })),
    lease_id: Type.Optional(Nullable(Type.Unsafe<string>({ ...LeaseId, description: "The budget lease the cost was spent from (POST /users/{user_id}/leases); the event settles against it" }))),
    source: Type.Optional(
      Type.Union([Type.Literal("auto"), Type.Literal("manual")], { default: "auto", description: "manual: counted as a manual event wherever events are told apart by source" }),
    ),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  },
  "Usage event",
);

const GateEventIn = EventBody(
  {
    id: Type.String({ format: "uuid", description: "Idempotency key" }),
    user_id: ExternalUserId(),
    service_user_id: Type.Optional(Nullable(Type.String({ maxLength: 255, pattern: WELL_FORMED_PATTERN }))),
    session_id: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
    timestamp: DateTime,
    status: Type.Union([Type.Literal("soft_gate"), Type.Literal("hard_gate")]),
    gate_reason: Type.String({ pattern: GATE_REASON_PATTERN, maxLength: 300, description: "total_spend, session_spend, model_limit:<model>, limit:<name>, or a team plan's prefixed team: (team:total_spend, team:model_limit:<model>, team:limit:<name>)" }),
    usage_pct: Type.Number({ minimum: 0, maximum: MAX_GATE_FIGURE }),
    current_value: Type.Number({ minimum: 0, maximum: MAX_GATE_FIGURE }),
    limit_value: Type.Number({ minimum: 0, maximum: MAX_GATE_FIGURE }),
    model: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
    blocked: Type.Optional(Type.Boolean({ default: false })),
    message: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    metadata: Type.Optional(Metadata),
  },
  "Gate event",
);

const BatchResult = Type.Object({ accepted: Type.Integer(), duplicates: Type.Integer() });

const ManualEventIn = EventBody({
  user_id: ExternalUserId(),
  cost: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: MAX_EVENT_COST, description: "Explicit dollars, used as given" }))),
  model: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  input_tokens: Type.Optional(Count),
  output_tokens: Type.Optional(Count),
  description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  tool_calls: Type.Optional(Type.Array(Type.String({ maxLength: 255 }))),
  metadata: Type.Optional(Metadata),
  session_id: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  idempotency_key: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 255 }))),
}, "Manual event");

const ManualEventOut = Type.Object({
  id: Type.String({ description: "evt_ followed by a UUID" }),
  user_id: Type.String(),
  cost: Type.Number(),
  model: Nullable(Type.String()),
  source: Type.Union([Type.Literal("manual"), Type.Literal("auto")]),
  created_at: DateTime,
});

/** Options of a batch ingestion route: per-product batch limits, the body cap and the shared wording of its limits. */
const batchRoute = <T extends TSchema>(event: T, operationId: string, summary: string, refused: string) => ({
  config: { ingest: true, perProductBatch: true },
  bodyLimit: BATCH_BODY_LIMIT,
  schema: {
    operationId,
    summary,
    description:
      `At most 10,000 events and 10 MiB per batch (413 beyond). ${refused} ` +
      "(the issues name each such event); fields an event does not define are ignored. " +
      "429 with Retry-After when the service holds more events than it stores in a few seconds " +
      "(INGESTION_MAX_EVENTS_IN_FLIGHT): send the same batch again after it (event ids make a resend safe).",
    tags: ["ingestion"],
    body: Type.Array(event),
    response: { 200: BatchResult, ...errors(400, 401, 413, 422, 429) },
  },
});

const ts = (s: string) => timestampFromDate(parseDateTime(s));

const big = (n: number | undefined) => BigInt(n ?? 0);

const usageEventMessage = (e: Static<typeof UsageEventIn>) => ({
  id: e.id,
  userId: e.user_id,
  sessionId: e.session_id ?? undefined,
  timestamp: ts(e.timestamp),
  model: e.model ?? undefined,
  inputTokens: big(e.input_tokens),
  outputTokens: big(e.output_tokens),
  totalTokens: big(e.total_tokens),
  toolCalls: e.tool_calls ?? [],
  costTokens: e.cost_tokens ?? 0,
  costTools: e.cost_tools ?? 0,
  costTotal: e.cost_total ?? 0,
  metadata: (e.metadata ?? {}) as JsonObject,
  leaseId: e.lease_id ?? undefined,
  source: e.source,
  description: e.description ?? undefined,
});

const gateEventMessage = (e: Static<typeof GateEventIn>) => ({
  id: e.id,
  userId: e.user_id,
  serviceUserId: e.service_user_id ?? undefined,
  sessionId: e.session_id ?? undefined,
  timestamp: ts(e.timestamp),
  status: e.status,
  gateReason: e.gate_reason,
  usagePct: e.usage_pct,
  currentValue: e.current_value,
  limitValue: e.limit_value,
  model: e.model ?? undefined,
  blocked: e.blocked ?? false,
  message: e.message ?? undefined,
  metadata: (e.metadata ?? {}) as JsonObject,
});

/** A batch route's work: count the fields its event schema does not define, send the batch on, answer the counts. */
async function forwardBatch<E extends object, M>(
  request: FastifyRequest,
  body: E[],
  event: { properties: Record<string, unknown> },
  toMessage: (e: E) => M,
  send: (req: { productId: string; events: M[] }, options: CallOptions) => Promise<{ accepted: number; duplicates: number }>,
) {
  countIgnoredFields(request.routeOptions.url!, event, body);
  const res = await send({ productId: request.productId, events: body.map(toMessage) }, rpcOptions(request));
  return { accepted: res.accepted, duplicates: res.duplicates };
}

export const eventRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/events/batch",
    batchRoute(
      UsageEventIn,
      "ingestUsageEvents",
      "Ingest a batch of usage events (idempotent on id)",
      "A malformed batch is refused whole (422), as is one with an event stamped more than 730 days before today " +
        "(UTC) or more than 5 minutes in the future",
    ),
    (request) => forwardBatch(request, request.body, UsageEventIn, usageEventMessage, (r, o) => app.services.ingestion.ingestUsageEvents(r, o)),
  );

  app.post(
    "/gate-events/batch",
    batchRoute(
      GateEventIn,
      "ingestGateEvents",
      "Ingest a batch of gate events (idempotent on id)",
      "A malformed batch is refused whole (422), as is one with a timestamp more than 90 days " +
        "(INGESTION_GATE_EVENT_DAYS) ago or more than 15 minutes ahead of the service's clock",
    ),
    (request) => forwardBatch(request, request.body, GateEventIn, gateEventMessage, (r, o) => app.services.ingestion.ingestGateEvents(r, o)),
  );

  app.post(
    "/events",
    {
      config: { ingest: true },
      schema: {
        operationId: "createManualEvent",
        summary: "Record a manual usage event",
        description:
          "Cost: `cost` as given; else tokens priced from the user's plan; else zero (audit entry). " +
          "A repeated idempotency_key answers 201 with the event first recorded.",
        tags: ["ingestion"],
        body: ManualEventIn,
        response: { 201: ManualEventOut, ...errors(400, 401, 404, 422) },
      },
    },
    async (request, reply) => {
      const b = request.body;
      countIgnoredFields(request.routeOptions.url!, ManualEventIn, [b]);
      const res = await app.services.ingestion.createManualEvent(
        {
          productId: request.productId,
          userId: b.user_id,
          cost: b.cost ?? undefined,
          model: b.model ?? undefined,
          inputTokens: big(b.input_tokens),
          outputTokens: big(b.output_tokens),
          description: b.description ?? undefined,
          toolCalls: b.tool_calls ?? [],
          metadata: (b.metadata ?? {}) as JsonObject,
          sessionId: b.session_id ?? undefined,
          idempotencyKey: b.idempotency_key ?? undefined,
        },
        rpcOptions(request),
      );
      const e = res.event!;
      return reply.status(201).send({
        id: e.id,
        user_id: e.userId,
        cost: e.cost,
        model: e.model ?? null,
        source: e.source as "manual" | "auto",
        created_at: timestampDate(e.createdAt!).toISOString(),
      });
    },
  );
};
