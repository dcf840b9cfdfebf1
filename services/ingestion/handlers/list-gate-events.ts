import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import { fromTimestamp, toTimestamp } from "@meter/lib/time";
import { decodeMetadata } from "../domain/field-keys.ts";
import type { IngestionDeps } from "../deps.ts";
import type { GateEventDoc } from "../store/gate-events.ts";
import { requireUser } from "./common.ts";

export const PAGE_DEFAULT = 100;
export const PAGE_MAX = 500;

/** The cursor is opaque to callers: base64url of [timestamp ms, stored id] of a page's last event. */
export function encodeCursor(doc: Pick<GateEventDoc, "timestamp" | "_id">): string {
  return Buffer.from(JSON.stringify([doc.timestamp.getTime(), doc._id])).toString("base64url");
}

export function decodeCursor(cursor: string, productId: string): { timestamp: Date; id: string } {
  try {
    const [ms, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown[];
    if (typeof ms === "number" && Number.isFinite(ms) && typeof id === "string" && id.startsWith(`${productId}/`)) {
      return { timestamp: new Date(ms), id };
    }
  } catch {
    // fall through
  }
  throw rpcError.invalid("cursor is not valid; pass next_cursor of the previous page unchanged");
}

export function toGateEvent(d: GateEventDoc) {
  return {
    id: d.event_id,
    userId: d.user_id,
    serviceUserId: d.service_user_id ?? undefined,
    sessionId: d.session_id ?? undefined,
    timestamp: toTimestamp(d.timestamp),
    status: d.status,
    gateReason: d.gate_reason,
    usagePct: d.usage_pct,
    currentValue: d.current_value,
    limitValue: d.limit_value,
    model: d.model ?? undefined,
    blocked: d.blocked,
    message: d.message ?? undefined,
    metadata: decodeMetadata(d.metadata) as JsonObject,
  };
}

export function listGateEvents(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["listGateEvents"] {
  return async (req) => {
    const productId = req.productId;
    const limit = req.limit === 0 ? PAGE_DEFAULT : req.limit;
    if (limit < 1 || limit > PAGE_MAX) throw rpcError.invalid(`limit must be 1-${PAGE_MAX}`);
    if (req.status !== undefined && req.status !== "soft_gate" && req.status !== "hard_gate") {
      throw rpcError.invalid("status must be soft_gate or hard_gate");
    }
    const after = req.cursor ? decodeCursor(req.cursor, productId) : undefined;
    await requireUser(deps, productId, req.userId);
    const { docs, resumeBefore } = await deps.gates.list({
      productId,
      userId: req.userId,
      status: req.status,
      gateReason: req.gateReason,
      blockedOnly: req.blockedOnly,
      since: fromTimestamp(req.since),
      until: fromTimestamp(req.until),
      after,
      limit: limit + 1,
    });
    const page = docs.slice(0, limit);
    return {
      userId: req.userId,
      events: page.map(toGateEvent),
      nextCursor:
        docs.length > limit
          ? encodeCursor(page[page.length - 1]!)
          : resumeBefore
            ? // Before every event of that hour: each id sorts after "<product>/".
              encodeCursor({ timestamp: resumeBefore, _id: `${productId}/` })
            : undefined,
    };
  };
}
