"""What the rules tests (test_rules*.py) share: the table of cases shared with the TypeScript client and the
service (rules/cases.json, read in place), how a case's expectation is checked, the counters and the evaluation of
a case's own plan, and a session view as the service answers it."""

from __future__ import annotations

from typing import Any

from meterline.counters import advance, hard_mark_of, new_counter, unit_of
from meterline.dimensions import evaluate_plan
from meterline.periods import parse_time
from meterline.types import PlanConfig
from meterline.windows import Bucket

from .support import rules

TABLE = rules()


def plan_of(raw: dict[str, Any] | None) -> PlanConfig | None:
    return None if raw is None else PlanConfig.parse(raw)


def matches(got: dict[str, Any], want: dict[str, Any], what: str) -> None:
    """Only the keys a case expects are checked; numbers exactly (money is exact at the nano-dollar)."""
    for k, v in want.items():
        assert got[k] == v, f"{what}: {k} {got[k]!r} != {v!r}"


def counters_of(plan: PlanConfig, usage: dict[str, Any], now: float, period: tuple[float, float]) -> list[Any]:
    """The counters of a case's plan limits as a client last saw them (the window of window_start, or the
    buckets), brought to now."""
    counters = []
    for i, lim in enumerate(plan.limits):
        u = usage["limits"][i]
        c = new_counter(lim, parse_time(u["window_start"]) if "window_start" in u else now, plan.time_zone, period)
        if "window_start" in u:
            c.used = unit_of(lim.metric, u["used"])
        else:
            c.buckets = [Bucket(parse_time(b["start"]), int(unit_of(lim.metric, b["used"]))) for b in u["buckets"]]
        c.held = unit_of(lim.metric, (usage.get("held") or [0] * len(plan.limits))[i])
        advance(lim, c, now, plan.time_zone, period, hard_mark_of(lim, plan.hard_gate_at))
        counters.append(c)
    return counters


def span(p: dict[str, str]) -> tuple[float, float]:
    return parse_time(p["start"]), parse_time(p["end"])


def evaluate_own(case: dict[str, Any], plan: PlanConfig | None, now: float) -> Any:
    period = span(case["billing_period"])
    u = case["usage"]
    call = case["call"]
    return evaluate_plan(
        plan,
        u["period_cost"],
        u["session_cost"],
        call["model"],
        u["model_tokens"],
        call["estimate_cost"],
        call["estimate_tokens"],
        period[1],
        None if case["session_end"] is None else parse_time(case["session_end"]),
        [] if plan is None else counters_of(plan, u, now, period),
    )


def view(over: dict[str, Any] | None = None, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    v: dict[str, Any] = {
        "user_id": "u",
        "service_user_id": "s1",
        "plan": "pro",
        "sdk_enabled": True,
        "plan_config": {"max_spend_per_period": 10, "model_limits": {"m": {"max_tokens_per_period": 1000}}},
        "current_usage": {
            "period_cost": 1,
            "period_tokens_total": 10,
            "period_tokens_by_model": {"m": 10},
            "period_cost_by_model": {"m": 1},
            **(usage or {}),
        },
        "billing_period": {"start": "2026-11-01T00:00:00.000Z", "end": "2026-12-01T00:00:00.000Z"},
    }
    v.update(over or {})
    return v
