import { create } from "@bufbuild/protobuf";
import { DeliverySchema, EndpointSchema, type Delivery, type Endpoint } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { optionalTimestamp, toTimestamp } from "@meter/lib/time";
import type { DeliveryDoc } from "../store/deliveries.ts";
import type { EndpointDoc } from "../store/endpoints.ts";

export function toEndpoint(doc: EndpointDoc): Endpoint {
  return create(EndpointSchema, {
    id: doc._id,
    url: doc.url,
    subscribedEvents: doc.subscribed_events,
    description: doc.description ?? undefined,
    enabled: doc.enabled,
    createdAt: toTimestamp(doc.created_at),
  });
}

export function toDelivery(doc: DeliveryDoc): Delivery {
  return create(DeliverySchema, {
    id: doc._id,
    eventType: doc.event_type,
    status: doc.status,
    statusCode: doc.status_code,
    attempt: doc.attempt,
    createdAt: toTimestamp(doc.created_at),
    completedAt: optionalTimestamp(doc.completed_at),
    eventId: doc.event_id,
    lastError: doc.last_error ?? undefined,
  });
}
