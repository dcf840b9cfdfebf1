"""Budget leases: replicas share one cap exactly, and a replica asks for its next slice ahead, in the
background, so that no call waits while the slice lasts."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from meterline import LimitExceededError, Meter
from meterline.flow import running

from .support import FaultProxy, Product, create_team_on_plan, eventually, near, straddle_a_period

CAP = 30.0
PLAN = {
    "max_spend_per_period": CAP,
    "pre_call_estimate": True,
    "pre_call_buffer_tokens": 100,
    "cost_rates": {"m": {"input": 0, "output": 10}},
}


def test_replicas_with_leases_never_pass_the_cap(product: Product) -> None:
    user = product.create_user(PLAN)
    replicas = [Meter(api_key=product.key, base_url=product.url, leases=True) for _ in range(3)]
    lock = threading.Lock()
    spent: list[float] = []
    blocked = [0]

    def call(i: int) -> None:
        m = replicas[i % len(replicas)]
        try:
            with m.reserve(user, model="m", input_tokens=0) as r:  # estimate $1.00
                ev = r.commit(output_tokens=random.randint(50, 100))
            with lock:
                spent.append(ev.cost_total)
        except LimitExceededError:
            with lock:
                blocked[0] += 1

    with ThreadPoolExecutor(max_workers=12) as pool:
        list(pool.map(call, range(150)))
    for m in replicas:
        assert m.shutdown(timeout=30)
    total = product.usage(user)["total_cost"]
    assert blocked[0] > 0
    assert near(total, sum(spent))
    assert total <= CAP + 1e-9, f"overshoot ${total - CAP:.2f}"
    assert all((m.stats.lease_requests or 0) > 0 for m in replicas)


# Small enough that the first slice asked for ($125) is more than half the cap; large enough that half of it is many
# round trips of these calls, even at a loaded machine's.
_OFFER_CAP = 200.0
_LEASES = r"POST /users/.*/leases$"


class _FirstOfTwo:
    """A replica that asked first (granted half the cap), then another holder (granted a third of the rest), and
    calls a tenth of a second apart from the first: a slow spend rate, so most of its slice is more than a round
    trip needs."""

    def __init__(self, product: Product, proxy: FaultProxy) -> None:
        self.product = product
        self.user = product.create_user({**PLAN, "max_spend_per_period": _OFFER_CAP})
        self.m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True)
        self.m.reserve(self.user, model="m", input_tokens=0).commit(output_tokens=100)  # $1.00
        self.calls = 1
        self.other = self.ask_as_other()

    def ask_as_other(self) -> dict[str, Any]:
        res = self.product.api.post(
            f"/users/{self.user}/leases", {"holder": "other", "need": 1, "want": _OFFER_CAP, "ttl_ms": 60_000}
        )
        lease: dict[str, Any] = res.json()["lease"]
        return lease

    def call(self) -> None:
        time.sleep(0.1)  # the model call
        self.m.reserve(self.user, model="m", input_tokens=0).commit(output_tokens=100)
        self.calls += 1

    def close(self) -> None:
        assert self.m.shutdown(timeout=30)
        assert near(self.product.usage(self.user)["total_cost"], self.calls * 1.0), "every call counted once"


def test_a_replica_that_asked_first_gives_back_what_it_holds_beyond_its_share_to_one_that_came_after(
    product: Product, proxy: FaultProxy
) -> None:
    r = _FirstOfTwo(product, proxy)
    first, answer = proxy.exchanges(_LEASES)[0]
    assert "spare" not in first, "nothing to offer before a rate is measured"
    assert near(answer["lease"]["added"], _OFFER_CAP / 2), "alone: half the cap"
    assert near(r.other["added"], _OFFER_CAP / 6), "the other holder: a third of what is left"

    def offers() -> list[tuple[Any, Any]]:
        return [(b, a) for b, a in proxy.exchanges(_LEASES) if (b.get("spare") or 0) > 0]

    while not offers() and r.calls < 50:
        r.call()
    eventually(lambda: len(offers()) > 0, what="an offer answered")
    body, answer = offers()[0]
    lease = answer["lease"]
    assert 0 < lease["returned"] <= body["spare"] + 1e-9, (body, lease)
    kept = lease["granted"] - lease["spent"]
    share = (_OFFER_CAP - lease["spent"]) / 3
    assert kept <= share + 1e-6 or near(lease["returned"], body["spare"]), "kept at most its share"
    assert r.ask_as_other()["added"] > 0, "what went back is the other holder's to be granted"
    assert r.m.stats.lease_waits == 1, "no call waited after the first"
    r.close()


def test_an_older_service_that_refuses_the_offers_field_leaves_the_slice_what_it_offered(
    product: Product, proxy: FaultProxy
) -> None:
    r = _FirstOfTwo(product, proxy)
    # The next lease request is the offer (the slice is far from its low-water mark): refused as a service without
    # the field refuses it.
    proxy.inject(_LEASES, "status", status=422, body={"detail": "body/spare must NOT have additional properties"})
    while r.calls < 50 and proxy.count(_LEASES) < 2:
        r.call()
    eventually(lambda: len(proxy.sent(_LEASES)) >= 2, what="the offer sent")
    assert (proxy.sent(_LEASES)[1].get("spare") or 0) > 0, proxy.sent(_LEASES)
    # Ten calls a tenth of a second apart: an offer the service took nothing of is made again within 0.2 s.
    for _ in range(10):
        r.call()
    assert [b for b in proxy.sent(_LEASES)[2:] if (b.get("spare") or 0) > 0] == [], "nothing offered again"
    assert r.m.stats.lease_waits == 1, "the calls spent what the refused request offered"
    r.close()


def test_a_reload_while_the_first_lease_request_is_on_its_way_the_slice_it_got_serves_the_call(
    product: Product, proxy: FaultProxy
) -> None:
    # $3, a call estimated at $2: the first request is granted the estimate, and $1 is left.
    user = product.create_user({**PLAN, "max_spend_per_period": 3.0})
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, flush_interval=60)
    try:
        m.guard(user, model="m")  # loads the view
        proxy.hold(_LEASES)
        with ThreadPoolExecutor(max_workers=1) as pool:
            call = pool.submit(m.reserve, user, model="m", input_tokens=0, max_output_tokens=200)
            eventually(lambda: proxy.holding == 1, what="the first lease request on its way")
            # The user's view is read again (a change notice, refresh()) while the grant is on its way: the call asks
            # again under the caps now in force, and the service, with $1 left, grants nothing more.
            assert m.refresh(user) is True
            proxy.release()
            r = call.result(timeout=30)
        assert [a["lease"]["added"] for _, a in proxy.exchanges(_LEASES)] == [2.0, 0.0], proxy.exchanges(_LEASES)
        r.commit(output_tokens=150)
    finally:
        assert m.shutdown(timeout=10)
    assert near(product.usage(user)["total_cost"], 1.5)


def test_a_call_reserved_in_one_period_and_committed_in_the_next_gives_its_estimate_back_to_that_period(
    product: Product, proxy: FaultProxy
) -> None:
    # The new period's slice is spent no further than granted: the straddling call's estimate was never in it.
    cap = 10.0
    plan_id = product.create_plan(**{**PLAN, "max_spend_per_period": cap})
    user = product.create_user()
    # Periods of 10 s, the first ending 5 s from now (periods roll on from a subscription's dates).
    end = datetime.now(timezone.utc) + timedelta(seconds=5)
    product.subscribe(user, plan_id, end - timedelta(seconds=10), end)
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True)
    m.start()

    def probe() -> dict[str, Any]:
        body = {"holder": "probe", "need": 0, "want": cap, "ttl_ms": 60_000}
        lease: dict[str, Any] = product.api.post(f"/users/{user}/leases", body).json()["lease"]
        return lease

    calls, refused = straddle_a_period(m, user, end.timestamp(), probe)
    assert refused.result.gate_reason == "total_spend"
    # What the service granted this process in the new period, before shutdown gives the rest back.
    new_period = [a["lease"] for _, a in proxy.exchanges(_LEASES) if a and a.get("lease")]
    granted = max(lease["granted"] for lease in new_period if datetime.fromisoformat(lease["period_end"]) > end)
    assert m.shutdown(timeout=30)
    eventually(lambda: near(product.usage(user)["total_cost"], calls * 1.0), what="the new period's calls counted")
    assert calls * 1.0 <= granted + 1e-9, f"this process spent ${calls} of the new period, granted ${granted}"


def test_a_slow_lease_request_delays_no_call_while_the_slice_lasts(product: Product, proxy: FaultProxy) -> None:
    user = product.create_user({**PLAN, "max_spend_per_period": 100_000})
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, lease_calls=10)
    assert m.stats.lease_waits == 0
    # The first slice (and the next, if one call already makes it look short) granted.
    m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)
    assert m.stats.lease_waits == 1, "the first call waited for the first slice"
    leases = r"POST /users/.*/leases$"
    eventually(lambda: proxy.count_answered(leases) == m.stats.lease_requests, what="the slices asked for granted")
    asked = m.stats.lease_requests or 0
    proxy.hold(leases)
    ran = 0
    # Spend until the replica asks ahead; that request hangs in the proxy, and calls keep running.
    while m.stats.lease_requests == asked and ran < 1000:
        r = m.reserve_now(user, model="m", input_tokens=0)
        assert r is not None, "a call waited for the lease request"
        r.commit(output_tokens=100)
        ran += 1
        time.sleep(0.01)  # the model call
    assert m.stats.lease_requests == asked + 1, "no top-up was asked for ahead"
    eventually(lambda: proxy.holding == 1, what="the top-up asked for ahead")
    for _ in range(2):
        r = m.reserve_now(user, model="m", input_tokens=0)
        assert r is not None, "a call waited while the slice still held budget"
        r.commit(output_tokens=100)
    assert m.stats.lease_waits == 1, "calls the slice covered waited for nothing"
    proxy.release()
    eventually(lambda: proxy.count(r"POST /users/.*/leases$") == asked + 1)
    assert m.shutdown(timeout=30)
    assert near(product.usage(user)["total_cost"], (ran + 3) * 1.0)


def test_a_replica_whose_slice_runs_low_asks_ahead_and_its_next_calls_do_not_wait(
    product: Product, proxy: FaultProxy
) -> None:
    user = product.create_user({**PLAN, "max_spend_per_period": 100_000})
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, lease_calls=10)
    leases = r"POST /users/.*/leases$"
    # The replica learns its spend rate (up to 50 calls a second) while lease requests answer at once.
    ran = 0
    for _ in range(50):
        m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)
        ran += 1
        time.sleep(0.02)
    asked = m.stats.lease_requests or 0
    # From now on lease requests hang in the proxy: the slice asked for ahead (a few round trips of
    # the rate, not lease_calls calls) covers the next calls meanwhile.
    proxy.hold(leases)
    # Spend until the slice runs low and the next one is asked for (and hangs), then 20 calls more.
    after = 0
    while after < 20:
        r = m.reserve_now(user, model="m", input_tokens=0)
        assert r is not None, f"a call waited for a lease request after {ran} calls"
        r.commit(output_tokens=100)
        ran += 1
        after += 1 if proxy.holding else 0
        assert ran < 3_000, "the slice never ran low"
        time.sleep(0.02)
    eventually(lambda: proxy.holding == 1, what="the next slice asked for ahead")
    assert (m.stats.lease_requests or 0) == asked + 1, "one request at a time"
    proxy.release()
    assert m.shutdown(timeout=30)
    assert near(product.usage(user)["total_cost"], ran * 1.0)


LEASES = r"POST /users/.*/leases$"


def _lost_grant(product: Product, proxy: FaultProxy) -> tuple[str, Meter, float]:
    """A client whose lease request was granted but whose answer was lost, so that a reserve was refused."""
    cap = 20.0
    user = product.create_user({**PLAN, "max_spend_per_period": cap})
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True)
    m.guard(user, model="m")  # loads the view
    proxy.inject(LEASES, "lose")
    with pytest.raises(LimitExceededError):
        m.reserve(user, model="m", input_tokens=0)
    assert proxy.count(LEASES) == 1
    return user, m, cap


def test_a_slice_granted_while_its_answer_was_lost_is_spent_once_the_service_answers_again(
    product: Product, proxy: FaultProxy
) -> None:
    user, m, cap = _lost_grant(product, proxy)
    assert product.usage(user)["total_cost"] == 0
    # Another holder takes everything the lost slice (half the cap) left.
    rest = product.api.post(f"/users/{user}/leases", {"holder": "other", "need": cap / 2, "want": cap}).json()
    assert rest["lease"]["added"] == cap / 2, rest
    # Nothing is left to grant; the slice granted with the lost answer is this replica's to spend.
    calls = 0
    while True:
        try:
            m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)  # $1.00, as estimated
        except LimitExceededError:
            break
        calls += 1
        assert calls <= cap
    assert calls == cap / 2, calls
    assert m.shutdown(timeout=30)
    assert near(product.usage(user)["total_cost"], cap / 2)


def test_a_slice_granted_while_its_answer_was_lost_is_given_back_at_shutdown(
    product: Product, proxy: FaultProxy
) -> None:
    user, m, cap = _lost_grant(product, proxy)
    assert m.shutdown(timeout=30)
    # Nothing is held any more: another holder may take the whole cap.
    whole = product.api.post(f"/users/{user}/leases", {"holder": "other", "need": cap, "want": cap}).json()
    assert whole["lease"]["added"] == cap, whole


def test_near_the_cap_a_call_that_what_is_held_and_what_is_left_cover_together_runs(product: Product) -> None:
    plan_id = product.create_plan(**{**PLAN, "max_spend_per_period": 20})
    user = product.create_user()
    now = datetime.now(timezone.utc)
    product.subscribe(user, plan_id, now - timedelta(days=1), now + timedelta(days=20))
    m = Meter(api_key=product.key, base_url=product.url, leases=True)
    try:
        m.guard(user, model="m")  # loads the view
        # Another holder leaves $1.875: the first call's $1.00 slice, then less than a call's estimate.
        rest = product.api.post(f"/users/{user}/leases", {"holder": "other", "need": 18.125, "want": 18.125}).json()
        assert rest["lease"]["added"] == 18.125, rest
        m.reserve(user, model="m", input_tokens=0).commit(output_tokens=75)  # $0.75 of $1.00 estimated
        # $1.125 is this process's to spend: what its slice holds plus what the service has left. The second call
        # runs; the service is asked only for what the slice lacks (asking the whole $1.00 was refused).
        m.reserve(user, model="m", input_tokens=0).commit(output_tokens=75)
        # $0.375 is left for it then: the third is gated.
        with pytest.raises(LimitExceededError) as refused:
            m.reserve(user, model="m", input_tokens=0)
        assert refused.value.result.gate_reason == "total_spend"
    finally:
        assert m.shutdown(timeout=30)
    assert near(product.usage(user)["total_cost"], 1.5)


def test_a_user_idle_for_lease_idle_is_forgotten_and_its_next_calls_lease_under_another_holder_within_the_cap(
    product: Product, proxy: FaultProxy
) -> None:
    cap = 6.0
    user = product.create_user({**PLAN, "max_spend_per_period": cap})
    # Idle long enough that the counts read right after calls are not raced by the sweep on a busy machine.
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, lease_idle=2.0)
    ids: set[str | None] = set()

    def call() -> None:
        with m.reserve(user, model="m", input_tokens=0) as r:  # estimate $1.00
            ids.add(r.commit(output_tokens=75).lease_id)  # $0.75

    call()
    assert m.stats.leased_users == 1
    eventually(lambda: m.stats.leased_users == 0, what="the idle user's book forgotten")
    assert proxy.count(r"/release$") == 1, "its lease given back before"
    calls = 1
    while True:
        try:
            call()
        except LimitExceededError:
            break
        calls += 1
    assert m.stats.leased_users == 1
    assert len(ids) == 2 and None not in ids, f"one lease id before it was forgotten, another after: {ids}"
    assert m.shutdown(timeout=30)
    total = product.usage(user)["total_cost"]
    assert near(total, calls * 0.75)
    # Every call whose estimate fitted ran, and none past the cap.
    assert total <= cap + 1e-9 and cap - total < 1.0, f"{total} spent of a cap of {cap}"


def test_an_idle_lease_is_given_back_within_lease_idle_whatever_the_flush_interval(
    product: Product, proxy: FaultProxy
) -> None:
    user = product.create_user(PLAN)
    # Deliveries once an hour: the lease's timer is its own.
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, lease_idle=0.2, flush_interval=3600)
    with m.reserve(user, model="m", input_tokens=0) as r:
        r.commit(output_tokens=75)
    eventually(lambda: proxy.count(r"/release$") == 1, what="the idle lease given back")
    eventually(lambda: m.stats.leased_users == 0, what="the idle user's book forgotten")
    assert proxy.count(r"/events/batch$") == 0, "no delivery before its interval"
    assert m.shutdown(timeout=30)
    assert near(product.usage(user)["total_cost"], 0.75)


def test_calls_that_spend_from_no_lease_hold_nothing_and_the_idle_users_book_goes(
    product: Product, proxy: FaultProxy
) -> None:
    # A service that does not lease windows yet refuses the field: the window is kept in this process, no lease.
    rpm = {"name": "rpm", "metric": "requests", "max": 1000, "window": "minute"}
    user = product.create_user({"limits": [rpm], "cost_rates": PLAN["cost_rates"]})
    refused = {"detail": "body/windows is not a known field"}
    proxy.inject(r"POST /users/.*/leases$", "status", status=422, times=1000, body=refused)
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, lease_idle=1.0)
    for _ in range(3):
        with m.reserve(user, model="m", input_tokens=0) as r:
            assert r.commit(output_tokens=10).lease_id is None
    eventually(lambda: m.stats.leased_users == 0, what="the idle user's book forgotten")
    assert m.shutdown(timeout=30)


def _subscribed_with_leases(product: Product, proxy: FaultProxy) -> tuple[str, str, Meter]:
    """A user subscribed to its own plan (a $100,000 cap), and a started client with leases through the proxy."""
    plan_id = product.create_plan(**{**PLAN, "max_spend_per_period": 100_000})
    user = product.create_user()
    now = datetime.now(timezone.utc)
    product.subscribe(user, plan_id, now - timedelta(days=1), now + timedelta(days=20))
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True)
    m.start()
    return plan_id, user, m


def _not_started_past_its_first_poll(product: Product, proxy: FaultProxy, change: Any = None) -> tuple[str, Meter]:
    """A user on a $1,000 cap (the first slice covers many $1.00 calls), and a client with leases that was never
    started: one call, then ``change(plan_id)``, then its first change poll (no marker to say what changed) and the
    view read twice more."""
    plan_id = product.create_plan(**{**PLAN, "max_spend_per_period": 1_000})
    user = product.create_user()
    now = datetime.now(timezone.utc)
    product.subscribe(user, plan_id, now - timedelta(days=1), now + timedelta(days=20))
    proxy.hold(r"GET /config/changes")
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, flush_interval=0.2)
    m.reserve(user, model="m", input_tokens=0).commit(output_tokens=70)
    if change is not None:
        change(plan_id)
    proxy.release()

    def read_twice_more() -> bool:
        # The read after the poll and the one more after it (the first may have raced the change), both applied.
        e = m._users.get(user)
        return (
            proxy.count_answered(r"GET /users/[^/]+/session") >= 3
            and e is not None
            and not e.recheck
            and not running(e.refreshing)
        )

    eventually(read_twice_more, what="the first poll and the view read twice more")
    return user, m


def test_a_meter_not_started_asks_no_lease_again_at_its_first_change_poll_for_a_view_that_did_not_change(
    product: Product, proxy: FaultProxy
) -> None:
    user, m = _not_started_past_its_first_poll(product, proxy)
    for _ in range(3):
        m.reserve(user, model="m", input_tokens=0).commit(output_tokens=70)
    assert m.shutdown(timeout=30)
    # Requests that ask for something (one offering back what the slice holds beyond its needs asks nothing).
    asks = [b for b in proxy.sent(_LEASES) if b.get("want", 0) > 0]
    assert len(asks) == 1, proxy.sent(_LEASES)


def test_a_meter_not_started_meets_a_cap_lowered_before_its_first_change_poll_with_a_slice_asked_under_it(
    product: Product, proxy: FaultProxy
) -> None:
    def lower(plan_id: str) -> None:
        # Below what the slice was granted under ($1,000), above what was spent.
        assert product.api.patch(f"/config/plans/{plan_id}", {"max_spend_per_period": 50}).status_code == 200

    user, m = _not_started_past_its_first_poll(product, proxy, lower)
    assert m.reserve_now(user, model="m", input_tokens=0) is None, "a call spent a slice granted under a higher cap"
    _until_refused(m, user, "total_spend")
    assert m.shutdown(timeout=30)
    assert product.usage(user)["total_cost"] <= 50 + 1e-9, "the lowered cap holds"


def _until_refused(m: Meter, user: str, reason: str) -> None:
    """Calls (each $1.00) until one is hard-gated for ``reason``, within 100 calls."""
    for _ in range(100):
        try:
            m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)
        except LimitExceededError as err:
            assert err.result.gate_reason == reason
            return
    raise AssertionError(f"100 calls ran without {reason} refusing one")


def _requests_done(m: Meter) -> bool:
    """No lease request of the client is on its way or having its answer recorded."""
    lr = m._leases
    assert lr is not None
    with lr.lock:
        return not any(running(b.asking) for b in lr.books.values()) and not any(
            running(t.asking) for t in lr.teams.values()
        )


def _cap_changed(product: Product, proxy: FaultProxy, m: Meter, user: str, plan_id: str, reason: str) -> None:
    """Calls before and after changes of ``plan_id``'s period spend cap (the user's plan, or its team's): a raised
    cap keeps the slice held spendable while its renewal hangs in the proxy; a lowered cap, below what the slice was
    granted under, makes calls wait for a slice granted under it; they are refused for ``reason``, and the cap
    holds."""
    leases = r"POST /users/.*/leases$"
    before = 5
    for _ in range(before):
        m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)

    def all_answered() -> None:
        # Counted by the client when asked: a request the last call asked ahead, not yet at the proxy, is waited for;
        # and the client done with each answer (a loaded machine can record one after the change below, which leaves
        # its grant unproven, or keep its request slot busy while the calls after the change take).
        eventually(
            lambda: proxy.count_answered(leases) == m.stats.lease_requests and _requests_done(m),
            what="no lease request on its way",
        )

    all_answered()
    # The slice proven under the caps before the change: a call runs from it without waiting. A reload that came
    # while a grant was on its way (a first change poll, should start() not have read the marker in time on a
    # loaded machine) leaves that grant unproven until a call asks again.
    while (r := m.reserve_now(user, model="m", input_tokens=0)) is None:
        m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)
        before += 1
        all_answered()
    r.commit(output_tokens=100)
    before += 1
    all_answered()
    asked = proxy.count(leases)
    # A raised cap: the slice held is still within it. The renewal hangs in the proxy meanwhile.
    proxy.hold(leases)
    assert product.api.patch(f"/config/plans/{plan_id}", {"max_spend_per_period": 200_000}).status_code == 200
    assert m.refresh(user)
    held = 8
    for i in range(held):
        r = m.reserve_now(user, model="m", input_tokens=0)
        assert r is not None, f"call {i} after the change waited for the lease request"
        r.commit(output_tokens=100)
    eventually(lambda: proxy.holding == 1, what="the lease renewed in the background")
    assert proxy.count_answered(leases) == asked, "the calls ran before the renewal answered"
    proxy.release()
    eventually(lambda: proxy.count_answered(leases) > asked, what="the renewal answered")
    # A lowered cap, below what the slice was granted under: calls wait for the lease under it, and the cap holds.
    cap = (before + held) * 1.0 + 10 * 1.0
    assert product.api.patch(f"/config/plans/{plan_id}", {"max_spend_per_period": cap}).status_code == 200
    assert m.refresh(user)
    assert m.reserve_now(user, model="m", input_tokens=0) is None, "a slice granted under a higher cap was spent"
    _until_refused(m, user, reason)
    assert m.shutdown(timeout=30)
    assert product.usage(user)["total_cost"] <= cap + 1e-9, "the lowered cap holds"


def test_after_a_plan_change_calls_keep_spending_the_slice_still_valid_under_the_new_caps(
    product: Product, proxy: FaultProxy
) -> None:
    plan_id, user, m = _subscribed_with_leases(product, proxy)
    _cap_changed(product, proxy, m, user, plan_id, "total_spend")


def _member_on_its_own_uncapped_plan(product: Product) -> str:
    """A user subscribed to a plan that caps nothing (its calls priced as PLAN's): only a team's caps stop it."""
    user = product.create_user()
    now = datetime.now(timezone.utc)
    product.subscribe(
        user,
        product.create_plan(**{**PLAN, "max_spend_per_period": None}),
        now - timedelta(days=1),
        now + timedelta(days=20),
    )
    return user


def test_after_a_change_of_the_team_plan_a_members_calls_keep_spending_the_team_slice_still_valid_under_it(
    product: Product, proxy: FaultProxy
) -> None:
    user = _member_on_its_own_uncapped_plan(product)
    plan_id = product.create_plan(max_spend_per_period=100_000, cost_rates=PLAN["cost_rates"])
    create_team_on_plan(product, plan_id, [user])
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True)
    m.start()
    _cap_changed(product, proxy, m, user, plan_id, "team:total_spend")


def test_a_call_that_needs_the_team_slice_while_it_is_being_given_back_waits_for_the_release_and_the_cap_holds(
    product: Product, proxy: FaultProxy
) -> None:
    # The member's own plan caps nothing: its calls spend the team's slice, which this process holds under its own
    # holder id.
    cap = 20.0
    user = _member_on_its_own_uncapped_plan(product)
    team_id = create_team_on_plan(
        product, product.create_plan(max_spend_per_period=cap, cost_rates=PLAN["cost_rates"]), [user]
    )
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, lease_idle=0.3)
    m.start()
    leases = r"POST /users/.*/leases$"
    release = r"POST /users/.*/leases/.*/release$"
    m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)
    # The idle slice's release is held on its way until the next call's lease request was answered (the order in
    # which the service would see them if the request did not wait), or a moment after that call began to wait.
    proxy.hold(release)
    eventually(lambda: proxy.holding == 1, what="the idle team slice given back")
    asked = proxy.count_answered(leases)
    waits = m.stats.lease_waits or 0
    with ThreadPoolExecutor(1) as pool:
        call = pool.submit(lambda: m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100))
        eventually(
            lambda: proxy.count_answered(leases) > asked or (m.stats.lease_waits or 0) > waits,
            what="the next call waiting",
        )
        if proxy.count_answered(leases) == asked:
            time.sleep(0.5)
        proxy.release()
        call.result(timeout=30)
    eventually(lambda: proxy.count_answered(release) == 1, what="the release answered")
    # The call's lease request reached the service after the release: it added to what the release left, not to what
    # the release then overwrote.
    (given_back, _), *_ = proxy.exchanges(release)
    team = proxy.exchanges(leases)[asked][1]["lease"]["team"]
    assert near(float(team["granted"]) - float(team["added"]), float(given_back["team_used"])), (given_back, team)
    # Another holder takes all the service counts as free of the team's cap; the calls then spend what this process
    # holds.
    probe = product.api.post(
        f"/users/{user}/leases",
        {"holder": "probe", "need": 0, "want": 0, "ttl_ms": 60_000, "team": {"need": 0, "want": cap}},
    )
    assert probe.status_code == 200, probe.text
    taken = float(probe.json()["lease"]["team"]["added"])
    _until_refused(m, user, "team:total_spend")
    assert m.shutdown(timeout=30)
    spent = float(product.api.get(f"/teams/{team_id}/usage").json()["total_cost"])
    assert spent + taken <= cap + 1e-9, f"the team spent ${spent} and another holder was granted ${taken} of ${cap}"


def test_a_plan_change_while_the_first_lease_request_is_on_its_way_the_call_waits_for_the_grant_under_the_new_caps(
    product: Product, proxy: FaultProxy
) -> None:
    plan_id, user, m = _subscribed_with_leases(product, proxy)
    leases = r"POST /users/.*/leases$"
    proxy.hold(leases)
    with ThreadPoolExecutor(1) as pool:
        call = pool.submit(lambda: m.reserve(user, model="m", input_tokens=0))
        eventually(lambda: proxy.holding == 1, what="the first lease request on its way")
        assert product.api.patch(f"/config/plans/{plan_id}", {"max_spend_per_period": 200_000}).status_code == 200
        assert m.refresh(user)
        proxy.release()
        call.result(timeout=30).commit(output_tokens=100)
    # Asked once more, under the new caps (a top-up asked ahead in the background may follow).
    assert proxy.count_answered(leases) >= 2, "asked once more, under the new caps"
    assert m.shutdown(timeout=30)
    assert near(product.usage(user)["total_cost"], 1.0)


def test_two_replicas_share_a_requests_window_through_leases(product: Product) -> None:
    # 10 calls a minute and no period cap: only the window's slices keep the replicas together within it.
    user = product.create_user(
        {
            "limits": [{"name": "rpm", "metric": "requests", "max": 10, "window": "minute"}],
            "cost_rates": PLAN["cost_rates"],
        }
    )
    replicas = [Meter(api_key=product.key, base_url=product.url, leases=True) for _ in range(2)]
    # Early in a minute, so that every call below falls in one window.
    left = 60 - time.time() % 60
    if left < 20:
        time.sleep(left + 0.05)
    ran = [0, 0]
    for _ in range(15):
        for i, m in enumerate(replicas):
            try:
                with m.reserve(user, model="m", input_tokens=0) as r:
                    r.commit(output_tokens=10)
                ran[i] += 1
            except LimitExceededError as err:
                assert err.reason == "limit:rpm", err
    assert sum(ran) <= 10, f"calls admitted in one minute by the two replicas: {ran}"
    assert ran[0] > 0 and ran[1] > 0, ran
    assert all((m.stats.lease_requests or 0) > 0 for m in replicas)
    for m in replicas:
        assert m.shutdown(timeout=30)
    counted = eventually(
        lambda: (
            next(x for x in product.api.get(f"/users/{user}/limits").json()["limits"] if x["reason"] == "limit:rpm")
            if product.usage(user)["total_tokens"] >= sum(ran) * 10
            else None
        ),
        what="every call counted",
    )
    assert counted["used"] == sum(ran)


def test_a_refusal_of_several_short_budgets_names_the_one_that_lifts_last() -> None:
    from meterline.leases import _lifts_last
    from meterline.types import GuardResult

    def short(reason: str, resets_at: str | None) -> GuardResult:
        return GuardResult("hard_gate", reason, 1.0, 1.0, 1.0, None, resets_at=resets_at)

    day = short("team:limit:daily", "2026-12-05T00:00:00.000Z")
    period = short("total_spend", "2026-12-15T00:00:00.000Z")
    assert _lifts_last([day, period]) is period
    assert _lifts_last([period, day]) is period
    never = short("limit:off", None)
    assert _lifts_last([period, never, day]) is never
    assert _lifts_last([day, short("limit:other", day.resets_at)]) is day
    assert _lifts_last([]) is None


def test_a_window_refused_for_a_large_call_serves_a_smaller_one_and_a_larger_limit_lifts_it(product: Product) -> None:
    daily = {"name": "daily", "metric": "spend", "max": 5, "window": "day"}
    plan_id = product.create_plan(
        limits=[daily], cost_rates={"m": {"input": 1, "output": 1}}, pre_call_estimate=True, pre_call_buffer_tokens=1000
    )
    user = f"u-window-{time.time_ns()}"
    assert product.api.post("/users", {"external_user_id": user}).status_code == 201
    assert product.api.post(f"/users/{user}/subscription", {"plan_id": plan_id}).status_code == 200
    first = Meter(api_key=product.key, base_url=product.url, leases=True)
    with first.reserve(user, model="m", input_tokens=3000) as r:
        r.commit(input_tokens=2500, output_tokens=1000)  # $3.50 of the day's $5.00
    assert first.shutdown(timeout=30)
    m = Meter(api_key=product.key, base_url=product.url, leases=True, flush_interval=0.2)
    try:
        with pytest.raises(LimitExceededError) as big:
            m.reserve(user, model="m", input_tokens=2000)  # estimated at $3.00
        assert big.value.result.gate_reason == "limit:daily"
        # One estimated at $1.00 fits what is left.
        with m.reserve(user, model="m", input_tokens=0) as small:
            small.commit(output_tokens=100)
        # The limit raised: the larger call runs once the change reaches the client, not at midnight.
        assert product.api.patch(f"/config/plans/{plan_id}", {"limits": [{**daily, "max": 50}]}).status_code == 200

        def larger_runs() -> bool:
            try:
                with m.reserve(user, model="m", input_tokens=2000) as r:
                    r.commit(input_tokens=2000, output_tokens=100)
            except LimitExceededError:
                return False
            return True

        eventually(larger_runs, what="the larger call to run under the raised limit")
    finally:
        assert m.shutdown(timeout=30)


def test_shutdown_gives_every_lease_back_at_once(product: Product, proxy: FaultProxy) -> None:
    users = [product.create_user({**PLAN, "max_spend_per_period": 100_000}) for _ in range(3)]
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, lease_calls=10)
    for user in users:
        m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)
    proxy.hold(r"/release$")
    done: list[bool] = []
    closing = threading.Thread(target=lambda: done.append(m.shutdown(timeout=20)))
    closing.start()
    try:
        # All three releases reach the service while none is answered: sent together, not one after another.
        eventually(lambda: proxy.count(r"/release$") == 3, what="the three releases sent at once")
    finally:
        proxy.release()
        closing.join(30)
    assert done == [True]


def test_a_lease_release_the_service_does_not_answer_leaves_shutdown_time_for_the_events(
    product: Product, proxy: FaultProxy
) -> None:
    user = product.create_user({**PLAN, "max_spend_per_period": 100_000})
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, lease_calls=10)
    for _ in range(3):
        m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)
    proxy.hold(r"/release$")
    try:
        assert m.shutdown(timeout=4), "the events delivered within the timeout"
    finally:
        proxy.release()
    assert near(product.usage(user)["total_cost"], 3.0)
