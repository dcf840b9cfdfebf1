"""Prepaid credits against the real stack: a pure-prepaid user blocked once its grant is spent (the error and the
429 body name the credits), running again after a top-up (its blocked calls read the view again), and the
callbacks (low once per crossing, depleted), on Meter and AsyncMeter. The TypeScript client's
sdk/typescript/test/credits-stack.test.ts."""

from __future__ import annotations

import asyncio
import random
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from meterline import AsyncMeter, CreditBalance, CreditsEvent, LimitCredits, LimitExceededError, Meter, limit_body

from .support import Product, eventually, near

# $1 per 1K tokens: a call of 200 tokens costs $0.20.
PREPAID: dict[str, Any] = {
    "max_spend_per_period": 0,
    "credits_enabled": True,
    "credits_low_at": 0.5,
    "cost_rates": {"m": {"input": 1, "output": 1}},
}


def grant(product: Product, user: str, amount: float) -> None:
    res = product.api.post(f"/users/{user}/credits", {"id": f"g-{uuid.uuid4()}", "amount": amount})
    assert res.status_code == 201, res.text


def balance(product: Product, user: str) -> dict[str, Any]:
    res = product.api.get(f"/users/{user}/credits")
    assert res.status_code == 200, res.text
    body: dict[str, Any] = res.json()
    return body


def watch(m: Meter | AsyncMeter) -> list[tuple[str, CreditsEvent]]:
    seen: list[tuple[str, CreditsEvent]] = []
    m.on_credits_low(lambda e: seen.append(("low", e)))
    m.on_credits_depleted(lambda e: seen.append(("depleted", e)))
    m.on_credits_expired(lambda e: seen.append(("expired", e)))
    return seen


@pytest.fixture
def user(product: Product) -> str:
    """A pure-prepaid user granted $1: five calls of $0.20 spend it (low with $0.40 left, then depleted)."""
    user = product.create_user(PREPAID)
    grant(product, user, 1)
    return user


def test_prepaid_grant_spent_blocks_naming_credits_then_a_top_up_runs_again(product: Product, user: str) -> None:
    m = Meter(api_key=product.key, base_url=product.url)
    try:
        seen = watch(m)
        for i in range(5):
            m.guard(user, model="m")
            m.record(user, model="m", input_tokens=100, output_tokens=100)
            if i == 1:
                assert seen == [], "no crossing at $0.60 left"
        assert seen == [("low", CreditsEvent(user, 0.4, 0.5)), ("depleted", CreditsEvent(user, 0.0, 0.5))]
        state = m.state(user)
        assert state is not None and state.credits == CreditBalance(0.0, 0.0, 0.5)
        with pytest.raises(LimitExceededError) as blocked:
            m.guard(user, model="m")
        assert blocked.value.reason == "total_spend"
        assert blocked.value.credits == LimitCredits(0.0, 0.5)
        assert limit_body(blocked.value)["credits"] == {"balance": 0.0, "low_at": 0.5}
        # Prepaid only: a new period brings nothing, so no reset to wait for (no Retry-After); a grant lifts it.
        assert blocked.value.resets_at is None and limit_body(blocked.value)["resets_at"] is None
        assert blocked.value.result.resets_at is None
        assert m.flush()
        # The gate event of the block says the credits ran out, as the error does.
        hard = [g for g in product.gate_events(user) if g["status"] == "hard_gate"]
        assert [(g["gate_reason"], g["metadata"].get("credits")) for g in hard] == [
            ("total_spend", {"balance": 0.0, "low_at": 0.5})
        ]
        eventually(lambda: near(balance(product, user)["balance"], 0), what="the service's balance spent")
        assert near(balance(product, user)["overdraft"], 0)

        # A top-up: the blocked user's calls read the view again (every 5 s at most) and run once it shows the grant.
        grant(product, user, 1)

        def runs() -> bool:
            try:
                m.guard(user, model="m")
            except LimitExceededError:
                return False
            return True

        eventually(runs, timeout=30, what="the client to see the top-up")
        state = m.state(user)
        assert state is not None and state.credits == CreditBalance(1.0, 0.0, 0.5)
        m.guard(user, model="m")
        for _ in range(3):
            m.record(user, model="m", input_tokens=100, output_tokens=100)
        assert seen[2:] == [("low", CreditsEvent(user, 0.4, 0.5))], "the grant armed the low mark again"
        assert m.flush()
        eventually(lambda: near(balance(product, user)["balance"], 0.4), what="the service's balance")
        assert near(product.usage(user)["total_cost"], 1.6)
    finally:
        m.shutdown(timeout=5)


def _whole_ms_from_now(seconds: float) -> datetime:
    """A time that many seconds on, in whole milliseconds: what the service keeps of it, so that the client's
    "expired at" and the test's are the same instant (sent with microseconds, the service's instant is up to 1 ms
    earlier, and a check right after it failed by 67 microseconds)."""
    t = datetime.now(timezone.utc) + timedelta(seconds=seconds)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def _user_with_promo_expiring_soon(product: Product) -> tuple[str, datetime]:
    """A prepaid user holding $1 and a $0.50 promotional grant that expires in 3 s, and that expiry."""
    user = product.create_user(PREPAID)
    expires_at = _whole_ms_from_now(3)
    res = product.api.post(
        f"/users/{user}/credits",
        {"id": "promo", "amount": 0.5, "kind": "promotional", "expires_at": expires_at.isoformat()},
    )
    assert res.status_code == 201, res.text
    grant(product, user, 1)
    return user, expires_at


def test_a_grant_expiring_fires_on_credits_expired_with_what_it_had_left(product: Product) -> None:
    user, expires_at = _user_with_promo_expiring_soon(product)
    # The client's sweep (every refresh_interval, on the delivery thread) sees the expiry without a call.
    m = Meter(api_key=product.key, base_url=product.url, flush_interval=0.2, refresh_interval=1)
    try:
        seen = watch(m)
        m.guard(user, model="m")
        state = m.state(user)
        assert state is not None and state.credits == CreditBalance(1.5, 0.0, 0.5)
        eventually(lambda: seen, timeout=30, what="on_credits_expired")
        assert seen == [("expired", CreditsEvent(user, 1.0, 0.5, "promo", 0.5))]
        assert datetime.now(timezone.utc) >= expires_at
        assert m.refresh(user)
        state = m.state(user)
        assert state is not None and state.credits == CreditBalance(1.0, 0.0, 0.5), "the view read again agrees"
        assert len(seen) == 1
    finally:
        m.shutdown(timeout=5)


async def test_an_async_top_up_hook_a_meter_fires_from_its_sweep_runs_on_the_loop_it_was_registered_on(
    product: Product,
) -> None:
    user, _ = _user_with_promo_expiring_soon(product)
    # The expiry is seen by the sweep on Meter's delivery thread, which runs no loop: the hook was closed unrun there.
    m = Meter(api_key=product.key, base_url=product.url, flush_interval=0.2, refresh_interval=1)
    fired = asyncio.Event()
    seen: list[tuple[CreditsEvent, asyncio.AbstractEventLoop]] = []

    async def top_up(event: CreditsEvent) -> None:
        seen.append((event, asyncio.get_running_loop()))
        fired.set()

    try:
        m.on_credits_expired(top_up)
        await m.aguard(user, model="m")
        await asyncio.wait_for(fired.wait(), 30)
        assert seen == [(CreditsEvent(user, 1.0, 0.5, "promo", 0.5), asyncio.get_running_loop())]
    finally:
        await m.ashutdown(timeout=5)


def test_a_call_after_the_only_grant_expired_is_blocked_by_the_expiry_itself(product: Product) -> None:
    user = product.create_user(PREPAID)
    expires_at = _whole_ms_from_now(2)
    res = product.api.post(
        f"/users/{user}/credits", {"id": "promo", "amount": 0.5, "expires_at": expires_at.isoformat()}
    )
    assert res.status_code == 201, res.text
    # No sweep or reload in the test's time: only the call itself can see the expiry.
    m = Meter(api_key=product.key, base_url=product.url, flush_interval=3600, refresh_interval=3600)
    try:
        seen = watch(m)
        m.guard(user, model="m")

        def blocked() -> bool:
            try:
                m.guard(user, model="m")
            except LimitExceededError as err:
                assert err.reason == "total_spend" and err.credits == LimitCredits(0.0, 0.5)
                return True
            return False

        eventually(blocked, timeout=30, what="the call after expires_at blocked")
        assert datetime.now(timezone.utc) >= expires_at
        assert seen == [
            ("expired", CreditsEvent(user, 0.0, 0.5, "promo", 0.5)),
            ("low", CreditsEvent(user, 0.0, 0.5)),
            ("depleted", CreditsEvent(user, 0.0, 0.5)),
        ]
    finally:
        m.shutdown(timeout=5)


def test_replicas_with_leases_on_a_balance_never_overdraw(product: Product) -> None:
    # Each call reserves $1.00 (100 buffer tokens at $10/1K) and spends $0.50-$1.00: more calls than a $5 balance.
    user = product.create_user(
        {
            "max_spend_per_period": 0,
            "credits_enabled": True,
            "pre_call_estimate": True,
            "pre_call_buffer_tokens": 100,
            "cost_rates": {"m": {"input": 0, "output": 10}},
        }
    )
    grant(product, user, 5)
    replicas = [Meter(api_key=product.key, base_url=product.url, leases=True) for _ in range(3)]
    lock = threading.Lock()
    spent: list[float] = []
    blocked: list[LimitExceededError] = []

    def call(i: int) -> None:
        m = replicas[i % len(replicas)]
        try:
            with m.reserve(user, model="m", input_tokens=0) as r:
                ev = r.commit(output_tokens=random.randint(50, 100))
            with lock:
                spent.append(ev.cost_total)
        except LimitExceededError as err:
            with lock:
                blocked.append(err)

    with ThreadPoolExecutor(max_workers=12) as pool:
        list(pool.map(call, range(60)))
    for m in replicas:
        assert m.shutdown(timeout=30)
    assert blocked and all(e.reason == "total_spend" and e.credits is not None for e in blocked)
    total = sum(spent)
    assert total <= 5 + 1e-9
    eventually(lambda: near(product.usage(user)["total_cost"], total), what="the usage counted")

    def settled() -> dict[str, Any] | None:
        b = balance(product, user)
        return b if near(b["balance"], 5 - total) else None

    assert eventually(settled, what="the balance")["overdraft"] == 0


async def test_async_meter_callbacks_and_the_block(product: Product, user: str) -> None:
    m = AsyncMeter(api_key=product.key, base_url=product.url)
    try:
        seen = watch(m)
        for _ in range(5):
            await m.guard(user, model="m")
            await m.record(user, model="m", input_tokens=100, output_tokens=100)
        assert [k for k, _ in seen] == ["low", "depleted"]
        with pytest.raises(LimitExceededError) as blocked:
            await m.guard(user, model="m")
        assert blocked.value.credits == LimitCredits(0.0, 0.5)
    finally:
        await m.shutdown(timeout=5)
