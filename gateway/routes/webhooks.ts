import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Delivery, Endpoint } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from "@meter/rules";
import { Body, DateTime, Nullable, errors, iso } from "../schemas/common.ts";
import { rpcOptions } from "../rpc-options.ts";

/** An event type as the API answers it: generated clients get the closed set. */
const EventType = Type.Unsafe<WebhookEventType>({ type: "string", enum: [...WEBHOOK_EVENT_TYPES] });

const EndpointBody = Type.Object({
  id: Type.String({ format: "uuid" }),
  url: Type.String(),
  subscribed_events: Type.Array(EventType),
  description: Nullable(Type.String()),
  enabled: Type.Boolean(),
  created_at: DateTime,
});

const SecretBody = Type.Object({ secret: Type.String({ description: "Signing secret (whsec_...)" }) });

const CreatedEndpointBody = Type.Object({ ...EndpointBody.properties, ...SecretBody.properties });

const Url = Type.String({ minLength: 1, maxLength: 2048, description: "https URL of a publicly reachable receiver" });
const SubscribedEvents = Type.Array(Type.String({ minLength: 1 }), {
  // Not an enum here: an unknown type is the service's 400 naming the allowed ones, not a schema 422.
  description: `Event types to receive, at least one of: ${WEBHOOK_EVENT_TYPES.join(", ")}`,
});
const Description = Nullable(Type.String({ maxLength: 1000 }));

const CreateEndpointBody = Body({ url: Url, subscribed_events: SubscribedEvents, description: Type.Optional(Description) });

const PatchEndpointBody = Body(
  {
    url: Type.Optional(Url),
    subscribed_events: Type.Optional(SubscribedEvents),
    description: Type.Optional(Description),
    enabled: Type.Optional(Type.Boolean()),
  },
  "Any subset of the fields; only those sent change (description null clears it)",
);

const DeliveryBody = Type.Object({
  id: Type.String({ description: "whdel_ + UUID" }),
  event_type: Type.String(),
  status: Type.Union([Type.Literal("success"), Type.Literal("failed"), Type.Literal("pending")]),
  status_code: Type.Integer({ description: "Status of the last answer; 0 before the first attempt or when there was no answer" }),
  attempt: Type.Integer({ description: "Attempts made so far (at most 6)" }),
  created_at: DateTime,
  completed_at: Nullable(DateTime),
  event_id: Type.String({ description: "The envelope's id (whevt_ + UUID): what the receiver got as X-Service-Delivery and as the body's id" }),
  last_error: Nullable(Type.String({ description: "Why the last attempt got no answer (\"connect ECONNREFUSED 127.0.0.1:9\", \"no answer within 10000 ms\") or was not sent; null when it was answered (status_code says how)" })),
});

const EndpointParams = Type.Object({ id: Type.String({ description: "Endpoint id; anything unknown is not found" }) });

const DeliveriesQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  status: Type.Optional(Type.Union([Type.Literal("success"), Type.Literal("failed"), Type.Literal("pending")])),
});

function endpointJson(e: Endpoint) {
  return {
    id: e.id,
    url: e.url,
    // The webhooks service stores only validated types.
    subscribed_events: e.subscribedEvents as WebhookEventType[],
    description: e.description ?? null,
    enabled: e.enabled,
    created_at: timestampDate(e.createdAt!).toISOString(),
  };
}

function deliveryJson(d: Delivery) {
  return {
    id: d.id,
    event_type: d.eventType,
    status: d.status as "success" | "failed" | "pending",
    status_code: d.statusCode,
    attempt: d.attempt,
    created_at: timestampDate(d.createdAt!).toISOString(),
    completed_at: iso(d.completedAt ? timestampDate(d.completedAt) : undefined),
    event_id: d.eventId,
    last_error: d.lastError ?? null,
  };
}

const tags = ["webhooks"];

/** The endpoint a request names, scoped to the calling product. */
const endpointRef = (request: { productId: string; params: { id: string } }) => ({
  productId: request.productId,
  endpointId: request.params.id,
});

export const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    "/webhooks/endpoints",
    {
      schema: {
        operationId: "createWebhookEndpoint",
        summary: "Register a webhook endpoint; the signing secret is in the response",
        tags,
        body: CreateEndpointBody,
        response: { 201: CreatedEndpointBody, ...errors(400, 401, 409, 422) },
      },
    },
    async (request, reply) => {
      const res = await app.services.webhooks.createEndpoint(
        {
          productId: request.productId,
          url: request.body.url,
          subscribedEvents: request.body.subscribed_events,
          description: request.body.description ?? undefined,
        },
        rpcOptions(request),
      );
      return reply.status(201).send({ ...endpointJson(res.endpoint!), secret: res.secret });
    },
  );

  app.get(
    "/webhooks/endpoints",
    {
      schema: { operationId: "listWebhookEndpoints", summary: "List webhook endpoints (without secrets)", tags, response: { 200: Type.Array(EndpointBody), ...errors(401) } },
    },
    async (request) => {
      const res = await app.services.webhooks.listEndpoints({ productId: request.productId }, rpcOptions(request));
      return res.endpoints.map(endpointJson);
    },
  );

  app.get(
    "/webhooks/endpoints/:id/secret",
    {
      schema: { operationId: "getWebhookEndpointSecret", summary: "Reveal an endpoint's signing secret", tags, params: EndpointParams, response: { 200: SecretBody, ...errors(401, 404) } },
    },
    async (request) => {
      const res = await app.services.webhooks.getEndpointSecret(endpointRef(request), rpcOptions(request));
      return { secret: res.secret };
    },
  );

  app.patch(
    "/webhooks/endpoints/:id",
    {
      schema: {
        operationId: "updateWebhookEndpoint",
        summary: "Change the fields sent and return the full endpoint",
        tags,
        params: EndpointParams,
        body: PatchEndpointBody,
        response: { 200: EndpointBody, ...errors(400, 401, 404, 422) },
      },
    },
    async (request) => {
      const b = request.body;
      const res = await app.services.webhooks.updateEndpoint(
        {
          ...endpointRef(request),
          endpoint: { url: b.url, subscribedEvents: b.subscribed_events ?? [], description: b.description ?? undefined, enabled: b.enabled },
          // JSON names are the EndpointPatch field names; description sent as null clears it.
          updateMask: { paths: Object.keys(b) },
        },
        rpcOptions(request),
      );
      return endpointJson(res.endpoint!);
    },
  );

  app.delete(
    "/webhooks/endpoints/:id",
    {
      schema: {
        operationId: "deleteWebhookEndpoint",
        summary: "Remove an endpoint and its delivery log",
        tags,
        params: EndpointParams,
        response: { 204: Type.Null({ description: "Removed" }), ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      await app.services.webhooks.deleteEndpoint(endpointRef(request), rpcOptions(request));
      return reply.status(204).send(null);
    },
  );

  app.post(
    "/webhooks/endpoints/:id/rotate-secret",
    {
      schema: {
        operationId: "rotateWebhookEndpointSecret",
        summary: "Issue a new signing secret; the old one stops signing at once",
        tags,
        params: EndpointParams,
        response: { 200: SecretBody, ...errors(401, 404) },
      },
    },
    async (request) => {
      const res = await app.services.webhooks.rotateEndpointSecret(endpointRef(request), rpcOptions(request));
      return { secret: res.secret };
    },
  );

  app.post(
    "/webhooks/endpoints/:id/test",
    {
      schema: {
        operationId: "testWebhookEndpoint",
        summary: "Send a signed webhook.test event now and report the answer (not retried, not logged)",
        tags,
        params: EndpointParams,
        response: {
          200: Type.Object({
            success: Type.Boolean(),
            status_code: Type.Integer(),
            response_time_ms: Type.Integer(),
            error: Nullable(Type.String({ description: "Why it got no answer (\"connect ECONNREFUSED 127.0.0.1:9\", \"no answer within 10000 ms\") or was not sent; null when it was answered (status_code says how)" })),
          }),
          ...errors(401, 404),
        },
      },
    },
    async (request) => {
      const res = await app.services.webhooks.testEndpoint(endpointRef(request), { ...rpcOptions(request), timeoutMs: 30_000 });
      return { success: res.success, status_code: res.statusCode, response_time_ms: res.responseTimeMs, error: res.error ?? null };
    },
  );

  app.get(
    "/webhooks/endpoints/:id/deliveries",
    {
      schema: {
        operationId: "listWebhookDeliveries",
        summary: "An endpoint's deliveries, newest first, cursor-paginated",
        tags,
        params: EndpointParams,
        querystring: DeliveriesQuery,
        response: {
          200: Type.Object({ deliveries: Type.Array(DeliveryBody), next_cursor: Nullable(Type.String()) }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (request) => {
      const q = request.query;
      const res = await app.services.webhooks.listDeliveries(
        { ...endpointRef(request), limit: q.limit, cursor: q.cursor, status: q.status },
        rpcOptions(request),
      );
      return { deliveries: res.deliveries.map(deliveryJson), next_cursor: res.nextCursor ?? null };
    },
  );
};
