import { randomUUID } from "node:crypto";

/** The webhook event types a gate event can produce. */
export const GATE_TYPES = ["gate_event.soft_gate", "gate_event.hard_gate", "gate_event.blocked"];

/** One gate event as `POST /gate-events/batch` takes it, stamped now; a hard gate blocks. */
export const gateEventBody = (userId: string, status: "soft_gate" | "hard_gate" = "soft_gate") => ({
  id: randomUUID(),
  user_id: userId,
  timestamp: new Date().toISOString(),
  status,
  gate_reason: "total_spend",
  usage_pct: status === "hard_gate" ? 1 : 0.8,
  current_value: status === "hard_gate" ? 10 : 8,
  limit_value: 10,
  blocked: status === "hard_gate",
});
