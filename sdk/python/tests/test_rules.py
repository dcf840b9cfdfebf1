"""Pure rules: the pricing table shared with the TypeScript client and the service
(sdk/typescript/test/rules.json, read in place), and the gate, period and session arithmetic."""

from __future__ import annotations

from typing import Any

import pytest

from meter_sdk import PlanConfig, Rate, evaluate, price
from meter_sdk.periods import apply_view, roll_locally
from meter_sdk.state import UserEntry, parse_time

from .support import near, rules

TABLE = rules()


def _plan(raw: dict[str, Any] | None) -> PlanConfig | None:
    return None if raw is None else PlanConfig.parse(raw)


@pytest.mark.parametrize(
    ("case", "pricing"),
    [(c, TABLE["pricing"]) for c in TABLE["cases"]] + [(c, None) for c in TABLE["without_plan"]],
    ids=lambda v: v["name"] if isinstance(v, dict) and "name" in v else "",
)
def test_pricing_table(case: dict[str, Any], pricing: dict[str, Any] | None) -> None:
    got = price(case["model"], case["input_tokens"], case["output_tokens"], case["tool_calls"], _plan(pricing))
    want = case["expect"]
    assert got.model == want["model"], case["name"]
    for k in ("cost_tokens", "cost_tools", "cost_total"):
        assert near(getattr(got, k), want[k]), f"{case['name']}: {k} {getattr(got, k)} != {want[k]}"


PLAN = PlanConfig(
    max_spend_per_period=10,
    max_spend_per_session=2,
    model_limits={"m": 1000},
    default_tool_cost=0.02,
)


def use(plan: PlanConfig | None = PLAN, **o: Any) -> Any:
    a: dict[str, Any] = {
        "period_cost": 0.0,
        "session_cost": 0.0,
        "model": "m",
        "model_tokens": 0,
        "estimate_cost": 0.0,
        "estimate_tokens": 0.0,
    }
    a.update(o)
    return evaluate(plan, **a)


def test_gates_worst_dimension_thresholds_zero_cap_unset_limits() -> None:
    assert use().status == "ok"
    r = use(period_cost=8.0)
    assert (r.status, r.gate_reason, r.usage_pct, r.current_value, r.limit_value) == (
        "soft_gate",
        "total_spend",
        0.8,
        8,
        10,
    )
    assert use(period_cost=8.0, session_cost=1.8).gate_reason == "session_spend"
    hard = use(period_cost=8.0, session_cost=1.8, model_tokens=1000)
    assert (hard.status, hard.gate_reason) == ("hard_gate", "model_limit:m")
    assert use(model="other", model_tokens=5000).status == "ok"
    assert use(PlanConfig(max_spend_per_period=0)).status == "hard_gate"
    assert use(PlanConfig(), period_cost=1e9).status == "ok"
    assert use(None, period_cost=1e9).status == "ok"
    assert use(period_cost=0.1 * 3 * (8 / 0.3) - 1e-13).status == "soft_gate"
    assert (
        use(PlanConfig(max_spend_per_period=10, soft_gate_at=0.5, hard_gate_at=0.9), period_cost=9).status
        == "hard_gate"
    )


def test_gates_with_an_estimate_land_on_the_cap_runs_past_it_blocks() -> None:
    assert use(period_cost=9.0, estimate_cost=1.0).status == "soft_gate"
    r = use(period_cost=9.0, estimate_cost=1.01)
    assert r.status == "hard_gate"
    assert abs(r.current_value - 10.01) < 1e-9
    # The message keeps what was spent apart from what the call's estimate would add.
    assert r.message is not None and "$9.0000 of $10.00 spent" in r.message and "estimate of $1.0100" in r.message
    assert use(model_tokens=900, estimate_tokens=101).gate_reason == "model_limit:m"


def test_plan_config_reads_omitted_and_null_caps_as_unlimited() -> None:
    omitted = PlanConfig.parse({"soft_gate_at": 0.8, "hard_gate_at": 1, "model_limits": {}, "cost_rates": {}})
    null = PlanConfig.parse({"max_spend_per_period": None, "max_spend_per_session": None, "default_cost_rate": None})
    for p in (omitted, null):
        assert p.max_spend_per_period is None and p.max_spend_per_session is None and p.default_cost_rate is None
        assert evaluate(p, 1e9, 1e9, None, 0).status == "ok"
    full = PlanConfig.parse(
        {
            "max_spend_per_period": 5,
            "default_cost_rate": {"input": 1, "output": 2},
            "model_limits": {"m": {"max_tokens_per_period": 7}},
        }
    )
    assert full.max_spend_per_period == 5 and full.default_cost_rate == Rate(1, 2) and full.model_limits == {"m": 7}


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


def test_periods_same_dates_keep_larger_fresh_dates_take_service_new_id_resets() -> None:
    now = parse_time("2026-11-15T00:00:00Z")
    e = UserEntry("u", now)
    assert apply_view(e, view(), now) == "first"
    e.period_cost += 2
    e.tokens_by_model["m"] = 30
    assert apply_view(e, view(usage={"period_cost": 1.5, "period_tokens_by_model": {"m": 50}}), now) == "same_period"
    assert e.period_cost == 3 and e.tokens_by_model == {"m": 50}
    fresh = {"start": "2026-11-10T00:00:00.000Z", "end": "2026-12-10T00:00:00.000Z"}
    assert apply_view(e, view({"billing_period": fresh}, {"period_cost": 0.25}), now) == "fresh_period"
    assert e.period_cost == 0.25
    before = e.sessions.own.id
    e.period_cost = 7
    assert apply_view(e, view({"service_user_id": "s2", "billing_period": fresh}, {"period_cost": 0}), now) == "reset"
    assert e.period_cost == 0 and e.sessions.own.id != before and e.service_user_id == "s2"
    apply_view(e, view({"sdk_enabled": False, "service_user_id": "s2", "billing_period": fresh}), now)
    assert e.config is None


def test_periods_past_the_end_without_an_answer_clear_and_repeat_the_length() -> None:
    e = UserEntry("u", parse_time("2026-11-15T00:00:00Z"))
    apply_view(e, view({"billing_period": {"start": "2026-11-01T00:00:00.000Z", "end": "2026-11-11T00:00:00.000Z"}}), 0)
    roll_locally(e, parse_time("2026-11-25T00:00:00Z"))
    assert e.period_start == "2026-11-21T00:00:00.000Z"
    assert e.period_end == "2026-12-01T00:00:00.000Z"
    assert e.period_cost == 0 and e.tokens_by_model == {}


def test_sessions_rotate_from_their_start_caller_sessions_apart() -> None:
    e = UserEntry("u", 0)
    first = e.sessions.at(None, 0, 1800)
    assert e.sessions.at(None, 1799, 1800) is first
    second = e.sessions.at(None, 1800, 1800)
    assert second.id != first.id
    mine = e.sessions.at("conv-1", 1800, 1800)
    assert mine.id == "conv-1" and e.sessions.at("conv-1", 1900, 1800) is mine
    e.sessions.prune(1900 + 1800, 1800)
    assert e.sessions.given is None
    assert e.sessions.idle(1900 + 1800 + 1800, 1800)


def test_messages_are_the_typescript_clients_words() -> None:
    # The examples of sdk/typescript/README.md and what its gates.ts prints for the same numbers.
    r = use(session_cost=0.48, estimate_cost=0.04, plan=PlanConfig(max_spend_per_session=0.5))
    assert r.message == (
        "Session spend limit reached: $0.4800 of $0.50 spent (96%); "
        "this call's estimate of $0.0400 would bring it to $0.5200 (104%)"
    )
    assert use(period_cost=1.0, plan=PlanConfig(max_spend_per_period=1)).message == (
        "Spend limit reached: $1.0000 of $1.00 spent (100%)"
    )
    assert use(model_tokens=1_234_500, estimate_tokens=100, plan=PlanConfig(model_limits={"m": 1_000_000})).message == (
        "Token limit reached for m this period: 1234500 of 1000000 tokens used (123%); "
        "this call's estimate of 100 tokens would bring it to 1234600 (123%)"
    )
