"""Budget leases on a plan without cost rates: every call is estimated at 0 and its cost is known only once it ran
(here one use of a priced tool). The slices are sized by what calls really cost (a share of the cap before the first
one), and the cap is passed by at most one call per replica calling one call at a time. The TypeScript client's
sdk/typescript/test/leases-unpriced.test.ts (which also runs replica processes)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, cast

import pytest

from meterline import LimitExceededError, Meter
from meterline.lease_books import Book
from meterline.lease_sizing import asked

from .support import Product, eventually, near

if TYPE_CHECKING:
    from meterline.state import UserEntry

CAP = 1.0
# One use of tool "t" per call; tokens cost nothing (no cost rates), so every estimate is 0.
CALL_COST = 0.1


def test_the_unit_is_the_largest_estimate_else_the_largest_cost_a_call_took_else_a_share_of_the_cap() -> None:
    b = Book("u", cast("UserEntry", None), "h", False)
    now = 1_000.0
    b.deadline = b.period_end = now + 60
    # Nothing known of the calls: the first request asks for cap / lease_calls.
    assert asked(b, b.spend, 0.0, now, False, 40, CAP)[1] == pytest.approx(CAP / 40)
    # A call estimated at 0 took $0.10 of that $0.025 slice: the unit is $0.10, and the $0.075 it took beyond the
    # slice is asked for on top of the low-water mark (one call) and 40 calls.
    b.spend.granted = CAP / 40
    b.spend.used = CALL_COST
    b.spend.finished(CALL_COST)
    assert b.spend.unit == CALL_COST
    need, want, short = asked(b, b.spend, 0.0, now, False, 40, CAP)
    assert short and need == 0.0
    assert want == pytest.approx(CALL_COST + 40 * CALL_COST + (CALL_COST - CAP / 40))
    # Once calls have an estimate, it is the unit.
    b.spend.estimate = 0.2
    assert b.spend.unit == 0.2


def _user(product: Product, pre_call_estimate: bool) -> str:
    return product.create_user(
        {"max_spend_per_period": CAP, "tool_costs": {"t": CALL_COST}, "pre_call_estimate": pre_call_estimate}
    )


def _call_until_refused(m: Meter, user: str) -> tuple[int, LimitExceededError]:
    for calls in range(100):
        try:
            with m.reserve(user, model="m", input_tokens=1000) as r:
                r.commit(input_tokens=1000, output_tokens=500, tool_calls=["t"])
        except LimitExceededError as err:
            return calls, err
    raise AssertionError("100 calls ran on a $1 cap")


def _counted(product: Product, user: str, calls: int) -> float:
    """The user's spend once the service counted every call."""

    def counted() -> bool:
        return near(float(product.usage(user)["total_cost"]), calls * CALL_COST)

    eventually(counted, what="every call counted")
    return float(product.usage(user)["total_cost"])


@pytest.mark.parametrize("pre_call_estimate", [False, True])
def test_calls_run_until_total_spend_blocks_them_past_the_cap_by_at_most_one_call(
    product: Product, pre_call_estimate: bool
) -> None:
    user = _user(product, pre_call_estimate)
    m = Meter(api_key=product.key, base_url=product.url, leases=True)
    leased: list[bool] = []
    m.on_usage(lambda ev: leased.append(ev.lease_id is not None))
    calls, refusal = _call_until_refused(m, user)
    assert m.shutdown(timeout=30)
    assert refusal.reason == "total_spend"
    assert calls >= 5, f"{calls} calls ran"
    spend = _counted(product, user, calls)
    print(f"pre_call_estimate {pre_call_estimate}: {calls} calls, ${spend} counted of a ${CAP} cap")
    assert leased and all(leased), "every call spent from the lease"
    assert spend <= CAP + CALL_COST + 1e-9, f"${spend} counted: at most one call past the cap"


def test_what_another_holder_leaves_blocks_the_calls_past_it_by_at_most_one_call(product: Product) -> None:
    user = _user(product, True)
    m = Meter(api_key=product.key, base_url=product.url, leases=True)
    m.guard(user, model="m")  # loads the view
    # Another holder takes $0.55: $0.45 is left for this process, far below what its own view would let it spend.
    other = product.api.post(f"/users/{user}/leases", {"holder": "other", "need": 0.55, "want": 0.55}).json()
    assert other["lease"]["added"] == 0.55, other
    calls, refusal = _call_until_refused(m, user)
    assert m.shutdown(timeout=30)
    spend = _counted(product, user, calls)
    print(f"$0.45 left by another holder: {calls} calls, ${spend} counted")
    assert refusal.reason == "total_spend"
    assert "no budget lease covers this call" in str(refusal)
    assert calls >= 3, f"{calls} calls ran"
    assert spend <= 0.45 + CALL_COST + 1e-9, f"${spend} counted of the $0.45 left: at most one call past it"


def test_two_replicas_one_call_at_a_time_each_pass_the_cap_by_at_most_one_call_each(product: Product) -> None:
    user = _user(product, False)
    replicas = [Meter(api_key=product.key, base_url=product.url, leases=True) for _ in range(2)]
    for m in replicas:
        m.guard(user, model="m")
    counts = [0, 0]
    reasons: set[str | None] = set()
    go = threading.Barrier(2)

    def run(i: int) -> None:
        go.wait()
        counts[i], refusal = _call_until_refused(replicas[i], user)
        reasons.add(refusal.reason)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for m in replicas:
        assert m.shutdown(timeout=30)
    assert reasons == {"total_spend"}
    assert all(c > 0 for c in counts), f"both replicas were served: {counts}"
    spend = _counted(product, user, sum(counts))
    print(f"2 replicas: {counts[0]} + {counts[1]} calls, ${spend} counted of a ${CAP} cap")
    assert spend <= CAP + 2 * CALL_COST + 1e-9, f"${spend} counted: at most one call past the cap per replica"
