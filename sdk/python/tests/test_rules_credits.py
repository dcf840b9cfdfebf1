"""The table's credits section (rules/cases.json): the period cap with a balance, the balance after spend,
what a block names, and the crossings of the low-balance mark."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from meterline.credits import blocked_by_credits, credit_balance, credit_cap, credit_crossing, credits_drawn
from meterline.gates import evaluate
from meterline.types import PlanConfig

from .rules_table import TABLE, matches

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
    matches(got, {k: v for k, v in case["expect"].items() if k != "credits"}, case["name"])
    assert ({"balance": balance, "low_at": cr["low_at"]} if named else None) == case["expect"]["credits"]


CROSSINGS = TABLE["credits"]["crossings"]


@pytest.mark.parametrize("case", CROSSINGS, ids=[c["name"] for c in CROSSINGS])
def test_credit_crossings_table(case: dict[str, Any]) -> None:
    got = credit_crossing(case["before"], case["after"], case["low_at"], case["armed"])
    matches(dataclasses.asdict(got), case["expect"], case["name"])
