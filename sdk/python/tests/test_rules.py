"""Pure rules: the table of cases shared with the TypeScript client and the service
(rules/cases.json, read in place), and the library's use of them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from meterline import PlanConfig, Rate, evaluate, price
from meterline.counters import advance, hard_mark_of, new_counter, unit_of
from meterline.credits import blocked_by_credits, credit_balance, credit_cap, credit_crossing, credits_drawn
from meterline.dimensions import evaluate_nano, evaluate_plan
from meterline.money import add_dollars, ratio, to_dollars, to_nano
from meterline.periods import calendar_month, iso, parse_time, roll_on
from meterline.plan_rules import rules_of, team_rules_of
from meterline.session_view import apply_view, roll_locally
from meterline.sessions import window_over
from meterline.state import DEFAULT_TIMEOUT, UserEntry
from meterline.team_dimensions import combine, evaluate_team
from meterline.windows import (
    CALENDAR_WINDOWS,
    Bucket,
    calendar_window,
    dimension_key,
    is_time_zone,
    rolling_resets_at,
    rolling_used,
)

from .support import rules

TABLE = rules()


def _plan(raw: dict[str, Any] | None) -> PlanConfig | None:
    return None if raw is None else PlanConfig.parse(raw)


def _matches(got: dict[str, Any], want: dict[str, Any], what: str) -> None:
    """Only the keys a case expects are checked; numbers exactly (money is exact at the nano-dollar)."""
    for k, v in want.items():
        assert got[k] == v, f"{what}: {k} {got[k]!r} != {v!r}"


def test_money_table() -> None:
    """Sums as whole nano-dollars converted once; ratios rounded to 1e-6."""
    for c in TABLE["money"]["sums"]:
        nano = 0
        for _ in range(c["times"]):
            nano += to_nano(c["amount"])
        assert to_dollars(nano) == c["expect"], f"{c['times']} x {c['amount']}"
    for c in TABLE["money"]["ratios"]:
        assert ratio(to_nano(c["part"]), to_nano(c["whole"])) == c["expect"], f"{c['part']} / {c['whole']}"


# An explicit cost is the service's rule for manual events: the client never prices one.
PRICING = [(c, g["plan"]) for g in TABLE["pricing"] for c in g["cases"] if "cost" not in c]


@pytest.mark.parametrize(("case", "pricing"), PRICING, ids=[c["name"] for c, _ in PRICING])
def test_pricing_table(case: dict[str, Any], pricing: dict[str, Any] | None) -> None:
    got = price(case["model"], case["input_tokens"], case["output_tokens"], case["tool_calls"], _plan(pricing))
    _matches(dataclasses.asdict(got), case["expect"], case["name"])


GATES = TABLE["gates"]["cases"]


@pytest.mark.parametrize("case", GATES, ids=[c["name"] for c in GATES])
def test_gates_table(case: dict[str, Any]) -> None:
    plan = _plan(case["plan"] if "plan" in case else TABLE["gates"]["plan"])
    u = case["usage"]
    args = ("period_cost", "session_cost", "model", "model_tokens", "estimate_cost", "estimate_tokens")
    got = evaluate(plan, *(u[k] for k in args))
    _matches(dataclasses.asdict(got), case["expect"], case["name"])


CREDITS = TABLE["credits"]["cases"]


@pytest.mark.parametrize("case", CREDITS, ids=[c["name"] for c in CREDITS])
def test_credits_table(case: dict[str, Any]) -> None:
    """The period cap with a balance, the balance after spend, and what a block names."""
    allowance, cr = case["allowance"], case["credits"]
    cap = allowance if cr is None else credit_cap(allowance, cr["drawn"], cr["balance"])
    plan = PlanConfig.parse({**case.get("plan", TABLE["credits"]["plan"]), "max_spend_per_period": cap})
    u = case["usage"]
    got = dataclasses.asdict(evaluate(plan, u["period_cost"], 0, None, 0, u["estimate_cost"], 0))
    got["cap"] = cap
    balance = None
    if cr is not None and cap is not None and allowance is not None:
        balance = got["balance"] = credit_balance(cap, allowance, u["period_cost"])
        assert credits_drawn(cap, allowance, cr["balance"]) == cr["drawn"]
    named = balance is not None and blocked_by_credits(
        got["gate_reason"], got["status"], got["current_value"], allowance
    )
    _matches(got, {k: v for k, v in case["expect"].items() if k != "credits"}, case["name"])
    assert ({"balance": balance, "low_at": cr["low_at"]} if named else None) == case["expect"]["credits"]


CROSSINGS = TABLE["credits"]["crossings"]


@pytest.mark.parametrize("case", CROSSINGS, ids=[c["name"] for c in CROSSINGS])
def test_credit_crossings_table(case: dict[str, Any]) -> None:
    got = credit_crossing(case["before"], case["after"], case["low_at"], case["armed"])
    _matches(dataclasses.asdict(got), case["expect"], case["name"])


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


WINDOWS = TABLE["windows"]


@pytest.mark.parametrize("case", WINDOWS["calendar"], ids=[c["name"] for c in WINDOWS["calendar"]])
def test_calendar_windows_table(case: dict[str, Any]) -> None:
    start, end = calendar_window(case["window"], parse_time(case["at"]), case["time_zone"])
    assert {"start": iso(start), "end": iso(end)} == case["expect"], case["name"]


@pytest.mark.parametrize("case", WINDOWS["rolling"], ids=[c["name"] for c in WINDOWS["rolling"]])
def test_rolling_windows_table(case: dict[str, Any]) -> None:
    buckets = [Bucket(parse_time(b["start"]), b["used"]) for b in case["buckets"]]
    now = parse_time(case["now"])
    resets = rolling_resets_at(buckets, case["duration_minutes"], case["hard_mark"], now)
    used = rolling_used(buckets, case["duration_minutes"], now)
    got = {"used": used, "resets_at": None if resets is None else iso(resets)}
    assert got == case["expect"], case["name"]


def test_dimension_keys_table() -> None:
    for c in WINDOWS["dimension_key"]:
        lim = c["limit"]
        assert dimension_key(lim["metric"], lim["window"], lim.get("duration_minutes"), lim.get("model")) == c["expect"]


ZONES = ["UTC", "America/New_York", "Europe/Berlin", "America/Santiago", "Asia/Kolkata", "Australia/Lord_Howe"]


@pytest.mark.parametrize("tz", ZONES)
def test_calendar_windows_tile_time(tz: str) -> None:
    """Consecutive windows: each starts where the one before ends, across daylight-saving changes."""
    for kind in CALENDAR_WINDOWS:
        t = parse_time("2026-01-01T00:00:00Z")
        stop = parse_time("2026-01-03T00:00:00Z" if kind in ("minute", "hour") else "2027-01-01T00:00:00Z")
        start, end = calendar_window(kind, t, tz)
        while end < stop:
            assert start <= t < end, f"{tz} {kind} {iso(t)}"
            nxt = calendar_window(kind, end, tz)
            assert nxt[0] == end, f"{tz} {kind}: the window after {iso(start)}"
            assert calendar_window(kind, end - 0.001, tz)[0] == start
            t = end
            start, end = nxt
    assert is_time_zone("Europe/Paris") and is_time_zone("UTC")
    assert not is_time_zone("Mars/Olympus") and not is_time_zone("")


DIMENSIONS = TABLE["dimensions"]["cases"]


def _counters(plan: PlanConfig, usage: dict[str, Any], now: float, period: tuple[float, float]) -> list[Any]:
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


def _span(p: dict[str, str]) -> tuple[float, float]:
    return parse_time(p["start"]), parse_time(p["end"])


def _own(case: dict[str, Any], plan: PlanConfig | None, now: float) -> Any:
    period = _span(case["billing_period"])
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
        [] if plan is None else _counters(plan, u, now, period),
    )


@pytest.mark.parametrize("case", DIMENSIONS, ids=[c["name"] for c in DIMENSIONS])
def test_dimensions_table(case: dict[str, Any]) -> None:
    got = _own(case, PlanConfig.parse(case["plan"]), parse_time(case["now"]))
    _matches(dataclasses.asdict(got), case["expect"], case["name"])


TEAMS = TABLE["teams"]["cases"]


@pytest.mark.parametrize("case", TEAMS, ids=[c["name"] for c in TEAMS])
def test_teams_table(case: dict[str, Any]) -> None:
    now = parse_time(case["now"])
    got = _own(case, _plan(case["plan"]), now)
    team = case["team"]
    if team is not None:
        plan = PlanConfig.parse(team["plan"])
        period = _span(team["billing_period"])
        u = team["usage"]
        call = case["call"]
        # One counter per team plan limit: the case gives the team's figure or the member's, by scope.
        counters = _counters(plan, u, now, period)
        got = combine(
            got,
            evaluate_team(plan, u["period_cost"], call["model"], u["model_tokens"], call["estimate_cost"],
                          call["estimate_tokens"], period[1], counters),
        )  # fmt: skip
        # The guard's one evaluation of both (admission.py) decides as the two combined.
        own_plan = _plan(case["plan"]) or PlanConfig()
        own_period = _span(case["billing_period"])
        mine = case["usage"]
        joined = evaluate_nano(
            rules_of(own_plan), to_nano(mine["period_cost"]), to_nano(mine["session_cost"]), call["model"],
            mine["model_tokens"], to_nano(call["estimate_cost"]), call["estimate_tokens"], own_period[1],
            None if case["session_end"] is None else parse_time(case["session_end"]),
            _counters(own_plan, mine, now, own_period),
            (team_rules_of(plan), to_nano(u["period_cost"]), u["model_tokens"], period[1], counters),
        )  # fmt: skip
        assert joined == got, case["name"]
    _matches(dataclasses.asdict(got), case["expect"], case["name"])


def test_teams_table_is_whole() -> None:
    assert len(TEAMS) >= 10


def test_dimensions_table_is_whole() -> None:
    assert len(DIMENSIONS) >= 25


def test_session_view_windows_merge_per_window_and_bucket_and_keep_counters_by_what_they_count() -> None:
    now = parse_time("2026-11-28T20:00:30Z")
    rpm = {"name": "rpm", "metric": "requests", "max": 5, "window": "minute"}
    roll = {"name": "roll", "metric": "spend", "max": 1, "window": "rolling", "duration_minutes": 60}
    cfg = {"max_spend_per_period": 10, "limits": [rpm, roll]}
    minute = "2026-11-28T20:00:00.000Z"
    limits: list[dict[str, Any]] = [
        {"reason": "limit:rpm", "name": "rpm", "window_start": minute, "used": 2},
        {"reason": "limit:roll", "name": "roll", "buckets": [{"start": "2026-11-28T19:30:00.000Z", "used": 0.25}]},
    ]
    e = UserEntry("u", now)
    apply_view(e, view({"plan_config": cfg, "limits": limits}), now)
    e.count_windows(None, 10, 0.5, now, now)
    e.advance_windows(now)
    assert (e.counters[0].used, e.counters[1].sum) == (3, to_nano(0.75))
    # Another process counted more in the minute, less in the bucket: each keeps the larger figure.
    limits[0]["used"] = 4
    limits[1]["buckets"] = [{"start": "2026-11-28T19:30:00.000Z", "used": 0.1}]
    apply_view(e, view({"plan_config": cfg, "limits": limits}), now)
    e.advance_windows(now)
    assert (e.counters[0].used, e.counters[1].sum) == (4, to_nano(0.75))
    # A renamed limit keeps its counter; another window starts empty.
    renamed = {**cfg, "limits": [{**rpm, "name": "per_minute"}, {**roll, "duration_minutes": 30}]}
    apply_view(e, view({"plan_config": renamed}), now)
    e.advance_windows(now)
    assert (e.counters[0].used, e.counters[1].sum) == (4, 0)
    # The window rolls at its end without a view.
    e.advance_windows(parse_time("2026-11-28T20:01:00Z"))
    assert e.counters[0].used == 0
