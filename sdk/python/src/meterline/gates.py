"""Gate evaluation (pure), ``meterline.gates.evaluate``: dimensions.py's ``evaluate_plan``, every dimension of a
plan for one call. Without counters (the arguments after ``estimate_tokens``) it is SPEC's three caps alone: the
period, the session and the call's model. Internal, as the TypeScript library's ``evaluatePlan`` (rules/) is."""

from __future__ import annotations

from .dimensions import evaluate_plan
from .plan_rules import OK_RESULT

__all__ = ["OK_RESULT", "evaluate"]

evaluate = evaluate_plan
