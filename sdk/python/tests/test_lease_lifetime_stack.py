"""A call longer than its lease's lifetime keeps its estimate held at the service: the client asks again while
it runs, and the service keeps a live lease even with nothing more to grant, so another replica is not granted
the same dollars meanwhile. Run against a stack whose LEASE_GRACE_MS is 200 ms (lease-lifetime.test.ts)."""

from __future__ import annotations

import time

import pytest

from meterline import LimitExceededError, Meter

from .support import Product, near

TTL = 1.0
GRACE = 0.2
PLAN = {
    "max_spend_per_period": 2.0,
    "pre_call_estimate": True,
    "pre_call_buffer_tokens": 1000,
    "cost_rates": {"m": {"input": 1, "output": 1}},
}


def test_a_call_longer_than_its_lease_keeps_its_estimate_from_another_replica(product: Product) -> None:
    def replica() -> Meter:
        return Meter(
            api_key=product.key, base_url=product.url, leases=True, lease_ttl=TTL, lease_idle=0.4, flush_interval=0.1
        )

    # Signed up before the replicas start: their change polls begin after it (a change seen while the first
    # lease request is on its way would have it asked again, which is not what this tests).
    user = product.create_user(PLAN)
    a, b = replica(), replica()
    a.start()
    b.start()
    with a.reserve(user, model="m", input_tokens=900) as r:  # estimate $1.90 of the $2.00 cap
        # The first lease's lifetime and the service's grace pass twice while the call runs.
        time.sleep(2 * (TTL + GRACE))
        with pytest.raises(LimitExceededError) as refused:
            b.reserve(user, model="m", input_tokens=1000)
        assert refused.value.result.gate_reason == "total_spend"
        r.commit(input_tokens=1000, output_tokens=500)
    assert a.shutdown(timeout=10)
    assert b.shutdown(timeout=10)
    assert near(product.usage(user)["total_cost"], 1.5), "the long call, counted once"
