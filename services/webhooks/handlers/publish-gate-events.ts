import type { ServiceImpl } from "@connectrpc/connect";
import type { GateNotice, WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { gateCredits } from "@meter/lib/gate-credits";
import { rpcError } from "@meter/lib/errors";
import { fromTimestamp } from "@meter/lib/time";
import type { WebhooksDeps } from "../deps.ts";
import { recordEvents } from "../flows/emit.ts";

/**
 * Which webhooks a gate event produces: status soft_gate -> gate_event.soft_gate, status
 * hard_gate -> gate_event.hard_gate, and blocked=true additionally -> gate_event.blocked.
 */
export function gateEventTypes(n: Pick<GateNotice, "status" | "blocked">): string[] {
  const types = [`gate_event.${n.status}`];
  if (n.blocked) types.push("gate_event.blocked");
  return types;
}

/**
 * Coalescing: at most one event per (user, gate_reason, type) per fixed window of the gate
 * event's own timestamp (windows start at multiples of the width since the Unix epoch). The
 * first gate event of a window is sent; the rest of the burst is absorbed by the unique key.
 * Keyed on the event timestamp, not arrival time, so handing the same gate event over again
 * always lands on the same key.
 */
export function gateKey(n: GateNotice, type: string, windowMs: number, at: Date): string {
  const windowStart = Math.floor(at.getTime() / windowMs) * windowMs;
  // As JSON: ids and reasons hold any character (":" in "team:total_spend"), so joined with a
  // separator user "x" on "team:total_spend" and user "x:team" on "total_spend" would share a key.
  return `gate:${JSON.stringify([n.userId, n.gateReason, type, new Date(windowStart).toISOString()])}`;
}

function validate(n: GateNotice): void {
  if (!n.productId) throw rpcError.invalid("gate event product_id is required");
  if (!n.userId) throw rpcError.invalid("gate event user_id is required");
  if (n.status !== "soft_gate" && n.status !== "hard_gate") throw rpcError.invalid("gate event status must be soft_gate or hard_gate");
  if (!n.gateReason) throw rpcError.invalid("gate event gate_reason is required");
}

export function publishGateEvents(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["publishGateEvents"] {
  return async (req) => {
    req.events.forEach(validate);
    const events = req.events.flatMap((n) => {
      const at = fromTimestamp(n.timestamp) ?? deps.now();
      return gateEventTypes(n).map((type) => ({
        productId: n.productId,
        type,
        key: gateKey(n, type, deps.gateWindowMs, at),
        data: {
          user_id: n.userId,
          status: n.status,
          gate_reason: n.gateReason,
          usage_pct: n.usagePct,
          current_value: n.currentValue,
          limit_value: n.limitValue,
          blocked: n.blocked,
          message: n.message ?? null,
          ...withCredits(gateCredits(n.status, n.metadata)),
        },
      }));
    });
    await recordEvents(deps, events);
    return {};
  };
}

const withCredits = (credits: ReturnType<typeof gateCredits>) => (credits ? { credits } : {});
