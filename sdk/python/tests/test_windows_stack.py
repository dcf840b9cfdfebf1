"""A plan's windows through the real stack, on the test's clock (windows.test.ts runs this file with the
stack in its process and ingestion reading the clock file): the client counts each call in every window,
blocks on the one at its cap with its reason and reset (the error, the 429 body and Retry-After), rolls the
window at its reset without a reload, and a fresh client finds the service's count in the session view."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from meterline import AsyncMeter, LimitExceededError, Meter, limit_body, retry_after_seconds
from meterline.clock import set_clock

from .support import Product, eventually

MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0


class Clock:
    """The client's and ingestion's time: set_clock for the library, the file for the stack."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.t = time.time()

    def set(self, t: float) -> None:
        self.t = t
        tmp = f"{self.path}.tmp"
        with open(tmp, "w") as f:
            f.write(str(math.floor(t * 1000)))
        os.replace(tmp, self.path)

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Iterator[Clock]:
    path = os.environ.get("METER_TEST_CLOCK_FILE")
    if not path:
        raise RuntimeError("METER_TEST_CLOCK_FILE is not set: run these tests through `npm test -- sdk/python`")
    c = Clock(path)
    c.set(time.time())
    set_clock(c)
    yield c
    set_clock()
    c.set(time.time())


def meter(product: Product) -> Meter:
    return Meter(api_key=product.key, base_url=product.url, flush_interval=600)


def at(t: float) -> datetime:
    return datetime.fromtimestamp(t, timezone.utc)


RPM = {"limits": [{"name": "rpm", "metric": "requests", "max": 5, "window": "minute"}]}


def test_five_requests_a_minute_block_the_sixth_call_here_and_in_a_fresh_client(product: Product, clock: Clock) -> None:
    clock.set(math.floor(time.time() / MINUTE) * MINUTE + 10)
    minute_end = math.floor(clock.t / MINUTE) * MINUTE + MINUTE
    user = product.create_user(RPM)
    m = meter(product)
    ran = 0

    def chat() -> None:
        nonlocal ran
        with m.reserve(user) as r:
            ran += 1
            r.commit(input_tokens=10)

    try:
        for _ in range(5):
            chat()
            clock.set(clock.t + 1)
        with pytest.raises(LimitExceededError) as blocked:
            chat()
        err = blocked.value
        assert ran == 5
        assert (err.reason, err.result.gate_reason, err.result.current_value) == ("limit:rpm", "limit:rpm", 6)
        assert err.resets_at == at(minute_end)

        # Another process: what it knows of the minute comes from the service's session view.
        assert m.flush(timeout=20)
        events = eventually(
            lambda: [g for g in product.gate_events(user) if g["blocked"]], what="the blocked call's gate event"
        )
        g = events[0]
        assert [g["gate_reason"], g["current_value"], g["limit_value"], g["usage_pct"]] == ["limit:rpm", 6, 5, 1.2]
        other = meter(product)
        try:
            with pytest.raises(LimitExceededError) as fresh:
                other.guard(user)
            assert fresh.value.reason == "limit:rpm"
            # The next minute runs, without a reload.
            clock.set(minute_end)
            chat()
            assert ran == 6
            assert other.guard(user).status == "ok"
        finally:
            other.shutdown(timeout=2)
    finally:
        m.shutdown(timeout=2)


async def test_five_requests_a_minute_block_the_sixth_call_of_an_async_meter(product: Product, clock: Clock) -> None:
    clock.set(math.floor(time.time() / MINUTE) * MINUTE + 10)
    minute_end = math.floor(clock.t / MINUTE) * MINUTE + MINUTE
    user = product.create_user(RPM)
    m = AsyncMeter(api_key=product.key, base_url=product.url, flush_interval=600)
    try:
        for _ in range(5):
            async with m.reserve(user) as r:
                r.commit(input_tokens=10)
            clock.set(clock.t + 1)
        with pytest.raises(LimitExceededError) as blocked:
            await m.guard(user)
        assert blocked.value.reason == "limit:rpm"
        assert blocked.value.result.current_value == 6
        assert blocked.value.resets_at == at(minute_end)
        clock.set(minute_end)
        assert (await m.guard(user)).status == "ok"
    finally:
        await m.shutdown()


def test_a_day_cap_blocks_with_limit_daily_until_the_next_midnight_of_the_plans_time_zone(
    product: Product, clock: Clock
) -> None:
    # 20:00 in Tokyo (UTC+9, no daylight saving) = 11:00 UTC: the latest before now; the next midnight there
    # is 15:00 UTC.
    now = time.time()
    today11 = math.floor(now / DAY) * DAY + 11 * HOUR
    t0 = today11 if today11 <= now else today11 - DAY
    midnight = t0 + 4 * HOUR
    clock.set(t0)
    plan = {
        "cost_rates": {"m": {"input": 1, "output": 0}},
        "time_zone": "Asia/Tokyo",
        "limits": [
            {"name": "daily", "metric": "spend", "max": 0.1, "window": "day"},
            {"name": "monthly", "metric": "spend", "max": 1, "window": "month"},
        ],
    }
    user = product.create_user(plan, at(t0 - 2 * DAY), at(t0 + 20 * DAY))
    m = meter(product)

    def chat() -> tuple[int, dict[str, object], dict[str, str]]:
        """A web app's handler: each call 40 input tokens at $1 per 1K, $0.04; a blocked one answers 429."""
        try:
            with m.reserve(user, model="m", input_tokens=40) as r:
                r.commit(input_tokens=40)
            return 200, {}, {}
        except LimitExceededError as err:
            after = retry_after_seconds(err)
            return err.status_code, limit_body(err), {} if after is None else {"Retry-After": str(after)}

    try:
        for i in range(3):
            assert chat()[0] == 200, f"call {i + 1}"
            clock.set(clock.t + MINUTE)
        # $0.12 spent today: the day cap blocks, the month's ($0.12 of $1) does not.
        status, body, headers = chat()
        assert status == 429
        assert body["gate_reason"] == "limit:daily"
        assert (body["current_value"], body["limit_value"]) == (0.12, 0.1)
        assert body["resets_at"] == at(midnight).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        assert int(headers["Retry-After"]) == midnight - clock.t

        # The service counted the same: GET /users/{id}/limits, as a product's server reads it.
        assert m.flush(timeout=20)
        limits = product.api.get(f"/users/{user}/limits").json()["limits"]
        daily = next(x for x in limits if x["reason"] == "limit:daily")
        assert [daily["used"], daily["resets_at"]] == [0.12, body["resets_at"]]

        # Past midnight in Tokyo the day starts over, without a reload; the month keeps counting.
        clock.set(midnight + MINUTE)
        assert chat()[0] == 200
        assert m.flush(timeout=20)
        after = product.api.get(f"/users/{user}/limits").json()["limits"]
        day = next(x for x in after if x["reason"] == "limit:daily")
        assert [day["used"], day["window_start"]] == [0.04, body["resets_at"]]
        month = next(x for x in after if x["reason"] == "limit:monthly")
        # 0.16 unless that midnight also began a month in Tokyo (UTC+9), where only the new call counts.
        month_began = datetime.fromtimestamp(midnight + 9 * HOUR, timezone.utc).day == 1
        assert month["used"] == (0.04 if month_began else 0.16), month
    finally:
        m.shutdown(timeout=2)


def test_a_rolling_window_releases_spend_as_it_ages_out(product: Product, clock: Clock) -> None:
    five = 5 * MINUTE
    clock.set(math.floor(time.time() / five) * five + 5)
    first_bucket = clock.t - 5
    rolling = {"name": "five-hours", "metric": "spend", "max": 0.1, "window": "rolling", "duration_minutes": 300}
    user = product.create_user({"cost_rates": {"m": {"input": 1, "output": 0}}, "limits": [rolling]})
    m = meter(product)

    def chat() -> None:
        with m.reserve(user, model="m", input_tokens=40) as r:
            r.commit(input_tokens=40)

    try:
        # $0.04 now, in an hour and in two hours (three buckets of 5 minutes).
        for _ in range(3):
            chat()
            clock.set(clock.t + HOUR)
        clock.set(clock.t - HOUR + MINUTE)
        with pytest.raises(LimitExceededError) as blocked:
            chat()
        assert blocked.value.reason == "limit:five-hours"
        # Below the cap once the first call's bucket leaves the window: its start + 5 minutes + 5 hours.
        release = first_bucket + five + 5 * HOUR
        assert blocked.value.resets_at == at(release)
        clock.set(release - 0.001)
        with pytest.raises(LimitExceededError):
            chat()
        clock.set(release)
        chat()

        # A fresh client sums the buckets the service still counts: $0.12 again, blocked.
        assert m.flush(timeout=20)
        other = meter(product)
        try:
            with pytest.raises(LimitExceededError) as fresh:
                other.guard(user, model="m")
            assert fresh.value.reason == "limit:five-hours"
            assert fresh.value.result.current_value == 0.12
        finally:
            other.shutdown(timeout=2)
    finally:
        m.shutdown(timeout=2)


def test_calls_in_flight_hold_a_request_each_and_give_it_back(product: Product, clock: Clock) -> None:
    clock.set(math.floor(time.time() / MINUTE) * MINUTE + 10)
    user = product.create_user(RPM)
    m = meter(product)
    try:
        held = [m.reserve(user) for _ in range(5)]
        with pytest.raises(LimitExceededError) as blocked:
            m.reserve(user)
        assert blocked.value.reason == "limit:rpm" and blocked.value.result.current_value == 6
        held.pop().release()
        with m.reserve(user) as r:
            r.commit(input_tokens=1)
        for r in held:
            r.release()
        # Four released, one committed: four calls left in the minute.
        for _ in range(4):
            m.guard(user)
            m.record(user, input_tokens=1)
        with pytest.raises(LimitExceededError):
            m.guard(user)
    finally:
        m.shutdown(timeout=2)
