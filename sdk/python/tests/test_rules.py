"""Pure rules: the table of cases shared with the TypeScript client and the service
(rules/cases.json, read in place), and the library's use of them. The table's credits, windows and dimensions,
and teams sections: test_rules_credits.py, test_rules_windows.py, test_rules_teams.py."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from meterline.gates import evaluate
from meterline.money import add_dollars, ratio, to_dollars, to_nano
from meterline.periods import calendar_month, iso, parse_time, roll_on
from meterline.pricing import estimate_tokens, price
from meterline.session_view import apply_view, roll_locally
from meterline.sessions import window_over
from meterline.state import DEFAULT_TIMEOUT, UserEntry
from meterline.types import PlanConfig, Rate

from .rules_table import TABLE, matches, plan_of, view


def test_event_bounds_table() -> None:
    from meterline.validate import MAX_EVENT_TOKENS, METADATA_MAX_DEPTH, external_id_problem

    bounds = TABLE["event_bounds"]
    assert bounds["max_event_tokens"] == MAX_EVENT_TOKENS
    assert bounds["metadata_max_depth"] == METADATA_MAX_DEPTH
    for c in bounds["external_ids"]:
        assert (external_id_problem(c["id"]) is None) == c["ok"], repr(c["id"])


def test_money_table() -> None:
    """Sums as whole nano-dollars converted once; ratios rounded to 1e-6."""
    for c in TABLE["money"]["sums"]:
        nano = 0
        for _ in range(c["times"]):
            nano += to_nano(c["amount"])
        assert to_dollars(nano) == c["expect"], f"{c['times']} x {c['amount']}"
    for c in TABLE["money"]["nanos"]:
        assert to_nano(c["amount"]) == c["expect"], f"{c['amount']} in nano-dollars"
    for c in TABLE["money"]["ratios"]:
        assert ratio(to_nano(c["part"]), to_nano(c["whole"])) == c["expect"], f"{c['part']} / {c['whole']}"


# An explicit cost is the service's rule for manual events: the client never prices one.
PRICING = [(c, g["plan"]) for g in TABLE["pricing"] for c in g["cases"] if "cost" not in c]


@pytest.mark.parametrize(("case", "pricing"), PRICING, ids=[c["name"] for c, _ in PRICING])
def test_pricing_table(case: dict[str, Any], pricing: dict[str, Any] | None) -> None:
    got = price(case["model"], case["input_tokens"], case["output_tokens"], case["tool_calls"], plan_of(pricing))
    matches(dataclasses.asdict(got), case["expect"], case["name"])


GATES = TABLE["gates"]["cases"]


@pytest.mark.parametrize("case", GATES, ids=[c["name"] for c in GATES])
def test_gates_table(case: dict[str, Any]) -> None:
    plan = plan_of(case["plan"] if "plan" in case else TABLE["gates"]["plan"])
    u = case["usage"]
    args = ("period_cost", "session_cost", "model", "model_tokens", "estimate_cost", "estimate_tokens")
    got = evaluate(plan, *(u[k] for k in args))
    matches(dataclasses.asdict(got), case["expect"], case["name"])


def test_plan_defaults_table() -> None:
    want = TABLE["plan_defaults"]["plan"]
    got = dataclasses.asdict(PlanConfig())
    assert {k: got[k] for k in want} == want
    # Without a plan nothing is gated or priced; the session window is the default one.
    assert TABLE["plan_defaults"]["no_plan"]["session_timeout_minutes"] * 60 == DEFAULT_TIMEOUT


ROLL_ON = TABLE["roll_on"]


@pytest.mark.parametrize("case", ROLL_ON, ids=[c["name"] for c in ROLL_ON])
def test_roll_on_table(case: dict[str, Any]) -> None:
    start, end = roll_on(parse_time(case["start"]), parse_time(case["end"]), parse_time(case["at"]))
    assert {"start": iso(start), "end": iso(end)} == case["expect"]


@pytest.mark.parametrize("case", TABLE["calendar_month"], ids=[c["at"] for c in TABLE["calendar_month"]])
def test_calendar_month_table(case: dict[str, Any]) -> None:
    start, end = calendar_month(parse_time(case["at"]))
    assert {"start": iso(start), "end": iso(end)} == case["expect"]


ESTIMATES = TABLE["estimate_tokens"]["cases"]


@pytest.mark.parametrize("case", ESTIMATES, ids=[c["name"] for c in ESTIMATES])
def test_estimate_tokens_table(case: dict[str, Any]) -> None:
    assert estimate_tokens(case["prompt"]) == case["expect"]


SESSIONS = TABLE["session_window"]["cases"]


@pytest.mark.parametrize("case", SESSIONS, ids=[c["name"] for c in SESSIONS])
def test_session_window_table(case: dict[str, Any]) -> None:
    over = window_over(parse_time(case["since"]), parse_time(case["at"]), case["session_timeout_minutes"] * 60.0)
    assert over is case["expect"]


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


def test_local_counters_are_exact() -> None:
    """200 calls of $0.00125 make $0.25 in the period and the session, not 0.2500000000000001;
    holds given back leave exactly nothing reserved."""
    from meterline.meter import Meter

    plan = PlanConfig.parse({"cost_rates": {"m": {"input": 1.25, "output": 0}}})
    e = UserEntry("u", 0)
    session = e.sessions.at(None, 0, DEFAULT_TIMEOUT)
    for _ in range(200):
        cost = price("m", 1, 0, [], plan).cost_total
        assert cost == 0.00125
        Meter._count(e, session, "m", 1, cost)
    state = e.snapshot(0)
    assert (state.period_cost, state.session_cost, state.period_cost_by_model["m"]) == (0.25, 0.25, 0.25)
    for _ in range(3):
        e.reserved_cost = add_dollars(e.reserved_cost, 0.1)
    for _ in range(3):
        e.reserved_cost = add_dollars(e.reserved_cost, -0.1)
    assert e.reserved_cost == 0


def test_numbers_in_messages_are_written_as_javascript_writes_them() -> None:
    # The TypeScript library's messages print numbers with String(x); these are node's answers.
    from meterline.money import fixed, js_number

    cases = {
        1000000: "1000000",
        0.00002: "0.00002",
        12.345678: "12.345678",
        2e-7: "2e-7",
        1e21: "1e+21",
        0.1: "0.1",
        -0.000001: "-0.000001",
        800.8: "800.8",
        5e-324: "5e-324",
    }
    assert {x: js_number(x) for x in cases} == cases
    # x.toFixed(n): the double's exact value rounded half away from zero (0.125 -> 0.13; 1.005 is 1.00499... -> 1.00).
    assert [fixed(0.125, 2), fixed(1.005, 2), fixed(0.15625, 4), fixed(-0.125, 2)] == [
        "0.13",
        "1.00",
        "0.1563",
        "-0.13",
    ]
