"""A call longer than its lease's lifetime keeps its estimate held at the service: the client asks again while
it runs, and the service keeps a live lease even with nothing more to grant, so another replica is not granted
the same dollars meanwhile. Run against a stack whose LEASE_GRACE_MS is 200 ms (lease-lifetime.test.ts)."""

from __future__ import annotations

import time

import pytest

from meterline import LimitExceededError, Meter

from .support import Product, create_team, near

TTL = 1.0
GRACE = 0.2
PLAN = {
    "max_spend_per_period": 2.0,
    "pre_call_estimate": True,
    "pre_call_buffer_tokens": 1000,
    "cost_rates": {"m": {"input": 1, "output": 1}},
}


def _long_call_keeps_its_estimate(product: Product, first: str, second: str, reason: str) -> None:
    """Replica A runs a call of ``first`` (estimate $1.90 of a $2.00 cap) through two lifetimes and graces of its
    lease; meanwhile replica B's call of ``second`` ($2.00) is refused with ``reason``."""

    def replica() -> Meter:
        return Meter(
            api_key=product.key, base_url=product.url, leases=True, lease_ttl=TTL, lease_idle=0.4, flush_interval=0.1
        )

    a, b = replica(), replica()
    a.start()
    b.start()
    with a.reserve(first, model="m", input_tokens=900) as r:
        # The first lease's lifetime and the service's grace pass twice while the call runs.
        time.sleep(2 * (TTL + GRACE))
        with pytest.raises(LimitExceededError) as refused:
            b.reserve(second, model="m", input_tokens=1000)
        assert refused.value.result.gate_reason == reason
        r.commit(input_tokens=1000, output_tokens=500)
    assert a.shutdown(timeout=10)
    assert b.shutdown(timeout=10)


def test_a_call_longer_than_its_lease_keeps_its_estimate_from_another_replica(product: Product) -> None:
    # Signed up before the replicas start: their change polls begin after it (a change seen while the first
    # lease request is on its way would have it asked again, which is not what this tests).
    user = product.create_user(PLAN)
    _long_call_keeps_its_estimate(product, user, user, "total_spend")
    assert near(product.usage(user)["total_cost"], 1.5), "the long call, counted once"


def test_a_refused_need_renews_nothing_past_the_leases_end_the_client_asks_again(product: Product) -> None:
    # $3: the first call is granted it and spends $1.20; the second needs $2 and holds $1.80, so its need of $0.20
    # is refused, and the service keeps the lease to its first end.
    user = product.create_user({**PLAN, "max_spend_per_period": 3.0})
    ttl = 3.0
    m = Meter(api_key=product.key, base_url=product.url, leases=True, lease_ttl=ttl, flush_interval=0.1)
    try:
        granted = time.monotonic()
        with m.reserve(user, model="m", input_tokens=1000) as r:
            r.commit(input_tokens=1000, output_tokens=200)
        # Settled against the lease at the service, as a replica's flush does within seconds.
        assert m.flush(timeout=10)
        time.sleep(ttl / 2)
        with pytest.raises(LimitExceededError) as refused:
            m.reserve(user, model="m", input_tokens=1000)
        assert refused.value.result.gate_reason == "total_spend"
        # Past the lease's end and the service's grace, before the end a renewal by the refusal would have given.
        time.sleep(max(0.0, granted + ttl + GRACE + 0.3 - time.monotonic()))
        waits = m.stats.lease_waits or 0
        # $1.50 fits the cap ($1.20 spent): asked of the service again, since the lease ended there.
        with m.reserve(user, model="m", input_tokens=500) as r:
            r.commit(input_tokens=500, output_tokens=0)
        assert (m.stats.lease_waits or 0) - waits == 1, "the call waited for a lease answer"
    finally:
        assert m.shutdown(timeout=10)
    assert near(product.usage(user)["total_cost"], 1.7)


def test_a_members_call_longer_than_the_lease_keeps_its_teams_slice_from_another_replica(product: Product) -> None:
    # Members whose own plans cap nothing: only the team's lease holds the running call's estimate.
    rates = {"m": {"input": 1, "output": 1}}
    member_plan = {
        "max_spend_per_period": None,
        "pre_call_estimate": True,
        "pre_call_buffer_tokens": 1000,
        "cost_rates": rates,
    }
    first, second = product.create_user(member_plan), product.create_user(member_plan)
    create_team(product, {"max_spend_per_period": 2.0, "cost_rates": rates}, [first, second])
    _long_call_keeps_its_estimate(product, first, second, "team:total_spend")
