import { Type } from "typebox";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { GateEvent } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { gateCredits } from "@meter/lib/gate-credits";
import { DateTime, KeyedBy, Nullable } from "./common.ts";

/** A gate event as GET /users/{user_id}/gate-events answers it. */
export const GateEventOut = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  service_user_id: Nullable(Type.String({ description: "As the client sent it (the user's internal id when it knew it), else null" })),
  session_id: Nullable(Type.String()),
  timestamp: DateTime,
  status: Type.String({ description: "soft_gate or hard_gate" }),
  gate_reason: Type.String(),
  usage_pct: Type.Number(),
  current_value: Type.Number(),
  limit_value: Type.Number(),
  model: Nullable(Type.String()),
  blocked: Type.Boolean(),
  message: Nullable(Type.String()),
  metadata: KeyedBy(Type.Unknown(), {
    description: "As sent; the client library adds suppressed_events, the gates of this kind it did not write since its previous event",
  }),
});

export function gateEventJson(e: GateEvent) {
  return {
    id: e.id,
    user_id: e.userId,
    service_user_id: e.serviceUserId ?? null,
    session_id: e.sessionId ?? null,
    timestamp: timestampDate(e.timestamp!).toISOString(),
    status: e.status,
    gate_reason: e.gateReason,
    usage_pct: e.usagePct,
    current_value: e.currentValue,
    limit_value: e.limitValue,
    model: e.model ?? null,
    blocked: e.blocked,
    message: e.message ?? null,
    metadata: e.metadata ?? {},
  };
}

/**
 * What the end user's portal shows of a gate event: not the ids and metadata the product sent
 * with it; a hard gate of prepaid credits that ran out says so (`credits`, from the library's
 * `metadata.credits`).
 */
export const PortalGateEventOut = Type.Object({
  ...Type.Omit(GateEventOut, ["user_id", "service_user_id", "session_id", "metadata"]).properties,
  credits: Type.Optional(Type.Object({ balance: Type.Number(), low_at: Nullable(Type.Number()) })),
});

export function portalGateEventJson(e: GateEvent) {
  const { user_id: _user, service_user_id: _service, session_id: _session, metadata, ...shown } = gateEventJson(e);
  const credits = gateCredits(e.status, metadata as Record<string, unknown>);
  return credits ? { ...shown, credits } : shown;
}
