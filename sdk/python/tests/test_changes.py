"""Plan and subscription changes reach a running client through the change marker
(GET /config/changes, polled once per flush tick), with default settings, and only the users
they concern are reloaded."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

import pytest

from meterline import LimitExceededError, Meter

from .support import DAY, FaultProxy, Product, eventually

PRICED = {"cost_rates": {"gpt-4o": {"input": 2.5, "output": 10}}, "default_tool_cost": 0.02}
# Default flush_interval (5 s) plus a reload: the change gates a call within this.
CHANGE_BOUND = 6.0


def loads(proxy: FaultProxy, user: str) -> int:
    return proxy.count(rf"GET /users/{re.escape(user)}/session")


def gated_within(call: Any, bound: float) -> None:
    """Polls ``call`` until it raises LimitExceededError, for at most ``bound`` seconds."""

    def blocked() -> bool:
        try:
            call()
        except LimitExceededError:
            return True
        return False

    eventually(blocked, timeout=bound, what="the change to gate a call")


def subscribe_now(product: Product, user: str, plan_id: str) -> None:
    now = datetime.now(timezone.utc)
    product.subscribe(user, plan_id, now - DAY, now + 20 * DAY)


def test_a_plan_update_gates_the_next_call_and_reloads_only_its_users(product: Product, proxy: FaultProxy) -> None:
    changed = product.create_plan(max_spend_per_period=100, **PRICED)
    other = product.create_plan(max_spend_per_period=100, **PRICED)
    a, b, c = product.create_user(), product.create_user(), product.create_user()
    subscribe_now(product, a, changed)
    subscribe_now(product, b, changed)
    subscribe_now(product, c, other)
    m = Meter(api_key=product.key, base_url=proxy.api_url)  # default flush_interval: 5 s
    assert m.start().authenticated
    for u in (a, b, c):
        m.record(u, model="gpt-4o", output_tokens=100)  # $1 each
        assert m.guard(u).status == "ok"
    assert [loads(proxy, u) for u in (a, b, c)] == [1, 1, 1]
    polls = proxy.count(r"GET /config/changes")
    assert product.api.patch(f"/config/plans/{changed}", {"max_spend_per_period": 1}).status_code == 200
    gated_within(lambda: m.guard(a), CHANGE_BOUND)
    # Both users' sessions are read again at once; b's answer may land a moment after a's.
    gated_within(lambda: m.guard(b), CHANGE_BOUND)
    # The users named are read once more on the next tick (a read racing the change may be stale):
    # after that second read, the user on the other plan has still been loaded once only.
    eventually(lambda: loads(proxy, b) >= 3, what="the second read of the changed plan's users")
    assert loads(proxy, c) == 1
    assert m.guard(c).status == "ok"
    # One request per tick for the whole client, whatever the number of users.
    ticks = proxy.count(r"GET /config/changes") - polls
    assert 1 <= ticks <= 4, ticks
    m.shutdown()


def test_a_plan_update_renews_the_budget_lease(product: Product, proxy: FaultProxy) -> None:
    plan = {
        "max_spend_per_period": 100_000,
        "pre_call_estimate": True,
        "pre_call_buffer_tokens": 100,
        "cost_rates": {"m": {"input": 0, "output": 10}},
    }
    plan_id = product.create_plan(**plan)
    user = product.create_user()
    subscribe_now(product, user, plan_id)
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, lease_calls=1000)
    assert m.start().authenticated
    for _ in range(3):
        with m.reserve(user, model="m", input_tokens=0) as r:  # estimate $1.00
            r.commit(output_tokens=100)
    assert m.flush()
    assert product.api.patch(f"/config/plans/{plan_id}", {"max_spend_per_period": 2}).status_code == 200

    def call() -> None:
        with m.reserve(user, model="m", input_tokens=0) as r:
            r.commit(output_tokens=100)

    # The lease granted under the old cap holds dollars for about 1,000 calls: the change gives it up,
    # and the service grants nothing under the new cap.
    gated_within(call, CHANGE_BOUND)
    with pytest.raises(LimitExceededError):
        call()
    m.shutdown()


def test_a_subscription_change_gates_the_next_call_and_reloads_only_that_user(
    product: Product, proxy: FaultProxy
) -> None:
    roomy = product.create_plan(max_spend_per_period=100, **PRICED)
    closed = product.create_plan(max_spend_per_period=0, **PRICED)
    moved, stays = product.create_user(), product.create_user()
    subscribe_now(product, moved, roomy)
    subscribe_now(product, stays, roomy)
    m = Meter(api_key=product.key, base_url=proxy.api_url)
    assert m.start().authenticated
    for u in (moved, stays):
        assert m.guard(u).status == "ok"
    subscribe_now(product, moved, closed)
    gated_within(lambda: m.guard(moved), CHANGE_BOUND)
    eventually(lambda: loads(proxy, moved) >= 3, what="the second read of the moved user")
    assert loads(proxy, stays) == 1
    m.shutdown()


def test_a_client_without_start_reloads_its_users_once_at_its_first_tick(product: Product, proxy: FaultProxy) -> None:
    plan_id = product.create_plan(max_spend_per_period=100, **PRICED)
    user = product.create_user()
    subscribe_now(product, user, plan_id)
    m = Meter(api_key=product.key, base_url=proxy.api_url, flush_interval=0.2)
    assert m.guard(user).status == "ok"
    # Changed before the client held any marker: only a reload of every cached user can see it.
    assert product.api.patch(f"/config/plans/{plan_id}", {"max_spend_per_period": 0}).status_code == 200
    gated_within(lambda: m.guard(user), 20)
    m.shutdown()
