// One entry of a plan's `limits` between its protobuf message and the JSON names the plans
// store, the gateway and ingestion use; written once so that a field added to a limit is
// mapped in one place.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PlanLimit as PlanLimitMessage, PlanLimitSchema } from "@meter/proto/meter/plans/v1/plans_pb";
import type { Metric, PlanLimit as AnsweredLimit, WindowKind } from "@meter/rules";

/** Where a team plan's limit counts (BUDGETS.md §4): the team's sum or each member's own; null reads as team. */
export type LimitScope = "team" | "member";
export const LIMIT_SCOPES: readonly LimitScope[] = ["team", "member"];

/**
 * One entry of a plan's `limits` with every field present (null: not given). `scope` is
 * optional for limits built before teams; the plans service always stores it (null: unset).
 */
export type PlanLimit = Required<AnsweredLimit> & { scope?: LimitScope | null };

/** A limit as sent; metric and window are not checked here (the plans service validates them). */
export function limitFromMessage(l: PlanLimitMessage): PlanLimit {
  return {
    name: l.name,
    metric: l.metric as Metric,
    max: l.max,
    window: l.window as WindowKind,
    duration_minutes: l.durationMinutes ?? null,
    model: l.model ?? null,
    soft_gate_at: l.softGateAt ?? null,
    hard_gate_at: l.hardGateAt ?? null,
    scope: (l.scope as LimitScope | undefined) ?? null,
  };
}

/** A limit as the message carries it: null and absent both leave a field unset. */
export function limitToMessage(l: {
  name: string;
  metric: string;
  max: number;
  window: string;
  duration_minutes?: number | null;
  model?: string | null;
  soft_gate_at?: number | null;
  hard_gate_at?: number | null;
  scope?: string | null;
}): MessageInitShape<typeof PlanLimitSchema> {
  return {
    name: l.name,
    metric: l.metric,
    max: l.max,
    window: l.window,
    durationMinutes: l.duration_minutes ?? undefined,
    model: l.model ?? undefined,
    softGateAt: l.soft_gate_at ?? undefined,
    hardGateAt: l.hard_gate_at ?? undefined,
    scope: l.scope ?? undefined,
  };
}
