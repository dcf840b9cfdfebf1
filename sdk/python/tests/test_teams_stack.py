"""Team budgets against the real stack, on Meter and AsyncMeter: a $1 team cap with 3 members blocks the third
member once the first two spent it (naming team:total_spend, here and in a fresh client), a $0.40 member cap
blocks one member while the others go on, and a member's own plan cap still applies. The TypeScript client's
sdk/typescript/test/teams-stack.test.ts."""

from __future__ import annotations

import asyncio

import pytest

from meterline import AsyncMeter, LimitExceededError, Meter, limit_body

from .support import Product, create_team, eventually

# $1 per 1K input tokens: a call of N input tokens costs N/1000 dollars.
RATES = {"m": {"input": 1, "output": 0}}


def test_a_team_cap_spent_by_two_members_blocks_the_third_naming_team_total_spend(product: Product) -> None:
    a, b, c = (product.create_user() for _ in range(3))
    create_team(product, {"max_spend_per_period": 1, "cost_rates": RATES}, [a, b, c])
    m = Meter(api_key=product.key, base_url=product.url)
    other = Meter(api_key=product.key, base_url=product.url)
    try:
        # Members without a plan of their own: priced at the team plan's rates.
        assert m.record(a, model="m", input_tokens=500).cost_total == 0.5
        m.guard(b, model="m")
        m.record(b, model="m", input_tokens=500)
        with pytest.raises(LimitExceededError) as blocked:
            m.guard(c, model="m")
        assert blocked.value.reason == "team:total_spend"
        assert str(blocked.value) == "Team spend limit reached: $1.0000 of $1.00 spent (100%)"
        body = limit_body(blocked.value)
        assert (body["gate_reason"], body["current_value"], body["limit_value"]) == ("team:total_spend", 1, 1)
        state = m.state(c)
        assert state is not None and state.team is not None and state.team.period_cost == 1
        assert m.flush()
        # The block is a gate event like any other: stored, listed, and sent to webhooks.
        gates = eventually(lambda: product.gate_events(c), what="the member's gate event")
        assert [(g["gate_reason"], g["status"], g["blocked"]) for g in gates] == [
            ("team:total_spend", "hard_gate", True)
        ]

        def fresh() -> str | None:
            other.refresh(c)
            try:
                other.guard(c, model="m")
            except LimitExceededError as err:
                return err.reason
            return None

        assert eventually(fresh, what="the team's spend in a fresh client") == "team:total_spend"
    finally:
        m.shutdown()
        other.shutdown()


def test_a_member_cap_blocks_one_member_while_the_others_go_on_async(product: Product) -> None:
    a, b = product.create_user(), product.create_user()
    seat = {"name": "seat", "metric": "spend", "max": 0.4, "window": "period", "scope": "member"}
    create_team(product, {"max_spend_per_period": 100, "cost_rates": RATES, "limits": [seat]}, [a, b])

    async def run() -> None:
        m = AsyncMeter(api_key=product.key, base_url=product.url)
        try:
            await m.guard(a, model="m")
            await m.record(a, model="m", input_tokens=400)
            with pytest.raises(LimitExceededError) as blocked:
                await m.guard(a, model="m")
            assert blocked.value.reason == "team:limit:seat"
            assert (
                str(blocked.value)
                == 'Member limit "seat" of the team reached: $0.4000 of $0.40 spent this period (100%)'
            )
            assert (await m.guard(b, model="m")).status == "ok"
            await m.record(b, model="m", input_tokens=300)
            assert (await m.guard(b, model="m")).status == "ok"
        finally:
            await m.shutdown()

    asyncio.run(run())


def test_a_members_own_plan_cap_still_applies_in_a_team_with_room(product: Product) -> None:
    a = product.create_user({"max_spend_per_period": 0.2, "cost_rates": RATES})
    create_team(product, {"max_spend_per_period": 10, "cost_rates": RATES}, [a])
    m = Meter(api_key=product.key, base_url=product.url)
    try:
        m.guard(a, model="m")
        m.record(a, model="m", input_tokens=200)
        with pytest.raises(LimitExceededError) as blocked:
            m.guard(a, model="m")
        assert blocked.value.reason == "total_spend"
    finally:
        m.shutdown()
