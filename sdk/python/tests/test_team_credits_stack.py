"""A team's credit pool against the real stack (BUDGETS.md section 4): the client counts the pool into the team's
cap, blocks a member once the members' calls spent it, names the team's credits in the block, and lets the member
run again once a grant tops the pool up. The TypeScript client's sdk/typescript/test/team-credits-stack.test.ts."""

from __future__ import annotations

from typing import Any

import pytest

from meterline import LimitCredits, LimitExceededError, Meter

from .support import Product, create_team, eventually
from .test_teams_stack import RATES


def test_a_team_pool_spent_by_two_members_blocks_naming_the_credits_and_a_top_up_lifts_it(product: Product) -> None:
    a, b = product.create_user(), product.create_user()
    plan: dict[str, Any] = {
        "max_spend_per_period": 0,
        "credits_enabled": True,
        "credits_low_at": 0.2,
        "cost_rates": RATES,
    }
    team_id = create_team(product, plan, [a, b])
    assert product.api.post(f"/teams/{team_id}/credits", {"id": "pay_1", "amount": 1}).status_code == 201
    m = Meter(api_key=product.key, base_url=product.url)
    try:
        m.guard(a, model="m")
        m.record(a, model="m", input_tokens=600)
        m.guard(b, model="m")
        m.record(b, model="m", input_tokens=400)
        with pytest.raises(LimitExceededError) as blocked:
            m.guard(a, model="m")
        assert blocked.value.reason == "team:total_spend"
        assert blocked.value.credits == LimitCredits(0.0, 0.2)
        assert m.flush()

        def drawn() -> bool:
            balance: float = product.api.get(f"/teams/{team_id}/credits").json()["balance"]
            return abs(balance) < 1e-9

        eventually(drawn, what="the pool drawn by the service")
        assert product.api.post(f"/teams/{team_id}/credits", {"id": "pay_2", "amount": 2}).status_code == 201
        m.refresh(a)
        m.guard(a, model="m")
        m.record(a, model="m", input_tokens=500)
        state = m.state(a)
        assert state is not None and state.team is not None and state.team.period_cost == 1.5
    finally:
        m.shutdown()
