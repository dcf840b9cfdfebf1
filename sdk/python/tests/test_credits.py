"""Prepaid credits as the library keeps them (credits.py): the view's cap with the balance as the user's period
cap, the local balance that spend past the allowance lowers, views merged in, the callbacks' crossings and
expiries. The TypeScript client's sdk/typescript/test/credits.test.ts, case for case; the stack's side:
test_credits_stack.py."""

from __future__ import annotations

from typing import Any

from meterline import CreditBalance, CreditsEvent, LimitCredits
from meterline.gates import evaluate
from meterline.periods import iso, parse_time
from meterline.session_view import apply_view, roll_locally
from meterline.state import UserEntry

NOW = parse_time("2026-11-15T00:00:00Z")


def view(
    balance: float,
    allowance: float = 0,
    cap: float | None = None,
    spend: float = 0,
    low_at: float | None = None,
    expiries: list[dict[str, Any]] | None = None,
    enabled: bool = True,
) -> dict[str, Any]:
    """A pure-prepaid plan (allowance 0) or an allowance plus credits; ``cap`` is the total_spend dimension's max
    (allowance + drawn + balance)."""
    return {
        "user_id": "u",
        "service_user_id": "s1",
        "plan": "prepaid",
        "sdk_enabled": True,
        "plan_config": {"max_spend_per_period": allowance, "credits_enabled": enabled, "credits_low_at": low_at},
        "current_usage": {"period_cost": spend, "period_tokens_by_model": {}, "period_cost_by_model": {}},
        "billing_period": {"start": "2026-11-01T00:00:00.000Z", "end": "2026-12-01T00:00:00.000Z"},
        "limits": [
            {
                "reason": "total_spend",
                "metric": "spend",
                "window": "period",
                "max": allowance + balance if cap is None else cap,
                "used": spend,
                "credits": {"balance": balance, "low_at": low_at} if enabled else None,
            }
        ],
        "credits": {"balance": balance, "pending": 0, "low_at": low_at, "expiries": expiries or []}
        if enabled
        else None,
    }


def spend(e: UserEntry, cost: float) -> None:
    session = e.sessions.at(None, NOW, e.timeout)
    e.period_cost += cost
    session.cost += cost


def kinds(news: list[tuple[str, CreditsEvent]]) -> list[str]:
    return [k for k, _ in news]


def test_cap_with_balance_local_balance_low_once_then_depleted() -> None:
    e = UserEntry("u", NOW)
    apply_view(e, view(1, low_at=0.5), NOW)
    assert e.config is not None and e.config.max_spend_per_period == 1
    assert e.credit_news(NOW) == []
    spend(e, 0.4)
    assert e.credit_news(NOW) == []
    spend(e, 0.2)
    assert e.credit_news(NOW) == [("low", CreditsEvent("u", 0.4, 0.5))]
    spend(e, 0.1)
    assert e.credit_news(NOW) == [], "once per crossing"
    spend(e, 0.3)
    assert e.credit_news(NOW) == [("depleted", CreditsEvent("u", 0.0, 0.5))]
    r = evaluate(e.config, e.period_cost, 0, None, 0)
    assert (r.status, r.gate_reason) == ("hard_gate", "total_spend")
    assert e.credits is not None
    assert e.credits.block(r.gate_reason, r.status, r.current_value, e.period_cost) == LimitCredits(0.0, 0.5)
    assert e.snapshot(NOW).credits == CreditBalance(0.0, 0.0, 0.5)


def test_same_cap_lower_balance_wins_grant_lifts_and_arms_again() -> None:
    e = UserEntry("u", NOW)
    apply_view(e, view(5, allowance=10, low_at=2), NOW)
    spend(e, 12)
    e.credit_news(NOW)
    # The service has not counted all of it yet: it still reports more balance and less spend.
    apply_view(e, view(4, allowance=10, cap=15, spend=11, low_at=2), NOW)
    assert e.credits is not None and e.credits.balance(e.period_cost) == 3
    spend(e, 1.5)
    assert kinds(e.credit_news(NOW)) == ["low"]
    # A $10 grant: the cap moves by it.
    apply_view(e, view(11.5, allowance=10, cap=25, spend=13.5, low_at=2), NOW)
    assert e.config is not None and e.config.max_spend_per_period == 25
    assert e.credit_news(NOW) == [], "lifted: nothing fires"
    spend(e, 10)
    assert [(k, ev.balance) for k, ev in e.credit_news(NOW)] == [("low", 1.5)], "armed again by the grant"
    # Spend within the allowance draws nothing, and a block there names no credits.
    f = UserEntry("f", NOW)
    apply_view(f, view(5, allowance=10), NOW)
    spend(f, 9)
    assert f.credits is not None and f.credits.balance(f.period_cost) == 5
    r = evaluate(f.config, 9, 0, None, 0)
    assert f.credits.block(r.gate_reason, r.status, r.current_value, f.period_cost) is None


def test_expiry_from_the_view_fires_with_what_it_had_left_and_lowers_the_cap() -> None:
    at = NOW + 60
    e = UserEntry("u", NOW)
    expiries = [
        {"grant_id": "promo", "at": iso(at), "remaining": 2},
        {"grant_id": "gone", "at": iso(NOW - 0.001), "remaining": 9},
    ]
    apply_view(e, view(3, low_at=1, expiries=expiries), NOW)
    assert e.credits is not None and e.credits.next_expiry == at
    assert e.credit_news(at - 0.001) == []
    assert e.credit_news(at) == [("expired", CreditsEvent("u", 1.0, 1, "promo", 2.0))]
    assert e.config is not None and e.config.max_spend_per_period == 1
    assert e.recheck, "the view is read again for the service's figure"
    assert e.credit_news(at + 1) == []
    f = UserEntry("f", NOW)
    apply_view(f, view(3, expiries=expiries[:1]), NOW)
    spend(f, 2.5)
    got = [(k, ev.amount, ev.balance) for k, ev in f.credit_news(at)]
    assert got == [("expired", 0.5, 0.0), ("depleted", None, 0.0)]


def test_disabled_or_no_view_credits_the_plan_as_it_is() -> None:
    e = UserEntry("u", NOW)
    apply_view(e, view(5, allowance=10, enabled=False), NOW)
    assert e.config is not None and e.config.max_spend_per_period == 10
    assert e.credits is None and e.credit_news(NOW) == [] and e.snapshot(NOW).credits is None


def test_period_rolled_locally_carries_the_balance() -> None:
    e = UserEntry("u", NOW)
    apply_view(e, view(2, allowance=1, low_at=0.5), NOW)
    spend(e, 1.5)
    roll_locally(e, parse_time("2026-12-02T00:00:00Z"))
    assert e.period_cost == 0
    assert e.config is not None and e.config.max_spend_per_period == 2.5
    assert e.credits is not None and e.credits.balance(0) == 1.5
