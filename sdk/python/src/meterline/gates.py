"""Gate evaluation (pure) of SPEC's three caps alone: the period, the session and the call's model. Every
dimension, with a plan's windows, is dimensions.py's ``evaluate_plan``; this is its form without counters."""

from __future__ import annotations

from .dimensions import evaluate_plan
from .plan_rules import OK_RESULT
from .types import GuardResult, PlanConfig

__all__ = ["OK_RESULT", "evaluate"]


def evaluate(
    plan: PlanConfig | None,
    period_cost: float,
    session_cost: float,
    model: str | None,
    model_tokens: float,
    estimate_cost: float = 0.0,
    estimate_tokens: float = 0.0,
) -> GuardResult:
    """Reaching ``hard_gate_at`` of a limit blocks; with an estimate, so does a call whose estimate would take
    usage past it (one that would land exactly on the cap runs). A limit of 0 blocks all."""
    return evaluate_plan(plan, period_cost, session_cost, model, model_tokens, estimate_cost, estimate_tokens)
