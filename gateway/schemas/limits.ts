import { Type } from "typebox";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Dimension } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { DateTime, Nullable } from "./common.ts";

/** One dimension of a user (docs/api.md, "Windows and rate limits"): the session view's `limits` and GET /users/{user_id}/limits. */
export const DimensionOut = Type.Object(
  {
    reason: Type.String({
      description: "total_spend, session_spend, model_limit:<model> or limit:<name>; a team plan's prefixed team: (team:total_spend, team:limit:<name>): the gate_reason when it blocks",
    }),
    name: Nullable(Type.String({ description: "The limit's name; null for SPEC's three" })),
    metric: Type.String({ description: "spend, tokens or requests" }),
    window: Type.String({ description: "minute, hour, day, week, month, period, rolling or session" }),
    duration_minutes: Nullable(Type.Integer({ description: "Rolling windows only" })),
    model: Nullable(Type.String()),
    scope: Type.String({ description: 'user (the user\'s own plan), team (a team plan\'s, over the team\'s sums) or member (a team plan\'s limit counted for this member alone)' }),
    max: Type.Number({ description: "Dollars for spend" }),
    used: Type.Number({ description: "Dollars for spend; 0 for session_spend (the client counts its own sessions)" }),
    pct: Type.Number({ description: "used / max rounded to 1e-6; 1 when max is 0" }),
    soft_gate_at: Type.Number({ description: "The limit's own, else the plan's" }),
    hard_gate_at: Type.Number({ description: "The limit's own, else the plan's" }),
    window_start: Nullable(DateTime),
    resets_at: Nullable({ ...DateTime, description: "When the window resets (a rolling one: when usage falls below the hard gate); null: never (max 0), nothing counted in a rolling window, or a session" }),
    buckets: Nullable(
      Type.Array(Type.Object({ start: DateTime, used: Type.Number({ description: "Dollars for spend" }) }), {
        description: "Rolling windows only: the buckets (1/60 of the window) that still count, oldest first",
      }),
    ),
    credits: Type.Optional(
      Type.Object(
        {
          balance: Type.Number({ description: "Dollars; negative with an overdraft" }),
          low_at: Nullable(Type.Number({ description: "The plan's credits_low_at; null: unset" })),
        },
        { description: "total_spend with credits enabled and an allowance: the balance counted into max" },
      ),
    ),
  },
  { description: "One thing a call is counted against, with its usage now" },
);

const iso = (t: Dimension["resetsAt"]) => (t ? timestampDate(t).toISOString() : null);

export function dimensionJson(d: Dimension) {
  return {
    reason: d.reason,
    name: d.name ?? null,
    metric: d.metric,
    window: d.window,
    duration_minutes: d.durationMinutes ?? null,
    model: d.model ?? null,
    scope: d.scope,
    max: d.max,
    used: d.used,
    pct: d.pct,
    soft_gate_at: d.softGateAt,
    hard_gate_at: d.hardGateAt,
    window_start: iso(d.windowStart),
    resets_at: iso(d.resetsAt),
    buckets: d.window === "rolling" ? d.buckets.map((b) => ({ start: timestampDate(b.start!).toISOString(), used: b.used })) : null,
    ...(d.credits && { credits: { balance: d.credits.balance, low_at: d.credits.lowAt ?? null } }),
  };
}
