"""The table's teams section (rules/cases.json): a member's call against its own plan and its team plan's, apart
(the team plan's evaluation, combine) and as the guard evaluates both at once (evaluate_nano's team)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from meterline.dimensions import evaluate_nano
from meterline.money import to_nano
from meterline.periods import parse_time
from meterline.plan_rules import rules_of, team_rules_of
from meterline.team_dimensions import combine
from meterline.types import PlanConfig

from .rules_table import TABLE, counters_of, evaluate_own, matches, plan_of, span

TEAMS = TABLE["teams"]["cases"]


@pytest.mark.parametrize("case", TEAMS, ids=[c["name"] for c in TEAMS])
def test_teams_table(case: dict[str, Any]) -> None:
    now = parse_time(case["now"])
    got = evaluate_own(case, plan_of(case["plan"]), now)
    team = case["team"]
    if team is not None:
        plan = PlanConfig.parse(team["plan"])
        period = span(team["billing_period"])
        u = team["usage"]
        call = case["call"]
        # One counter per team plan limit: the case gives the team's figure or the member's, by scope.
        counters = counters_of(plan, u, now, period)
        # The team plan's result apart: its period and model caps over the team's sums, each limit over its
        # counter, reasons prefixed ``team:``, no session cap.
        team_result = evaluate_nano(
            team_rules_of(plan), to_nano(u["period_cost"]), 0, call["model"], u["model_tokens"],
            to_nano(call["estimate_cost"]), call["estimate_tokens"], period[1], None, counters,
        )  # fmt: skip
        got = combine(got, team_result)
        # The guard's one evaluation of both (admission.py) decides as the two combined.
        own_plan = plan_of(case["plan"]) or PlanConfig()
        own_period = span(case["billing_period"])
        mine = case["usage"]
        joined = evaluate_nano(
            rules_of(own_plan), to_nano(mine["period_cost"]), to_nano(mine["session_cost"]), call["model"],
            mine["model_tokens"], to_nano(call["estimate_cost"]), call["estimate_tokens"], own_period[1],
            None if case["session_end"] is None else parse_time(case["session_end"]),
            counters_of(own_plan, mine, now, own_period),
            (team_rules_of(plan), to_nano(u["period_cost"]), u["model_tokens"], period[1], counters),
        )  # fmt: skip
        assert joined == got, case["name"]
    matches(dataclasses.asdict(got), case["expect"], case["name"])


def test_teams_table_is_whole() -> None:
    assert len(TEAMS) >= 10
