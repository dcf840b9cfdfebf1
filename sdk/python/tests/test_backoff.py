"""The delivery backoff (transport.backoff): a 429's Retry-After as given plus jitter, other failures doubling."""

from __future__ import annotations

from meterline.errors import MeterAPIError, MeterNetworkError
from meterline.transport import backoff


def _many(failures: int, err: MeterAPIError | MeterNetworkError) -> list[float]:
    return [backoff(failures, err) for _ in range(500)]


def test_a_429_waits_its_retry_after_plus_up_to_half_whatever_the_failures_before() -> None:
    for failures in (1, 4, 10):
        waits = _many(failures, MeterAPIError(429, "busy", 2.0))
        assert all(2.0 <= w <= 3.0 for w in waits), (failures, min(waits), max(waits))
        assert max(waits) - min(waits) > 0.3  # spread out, not one moment
    assert all(60.0 <= w <= 90.0 for w in _many(1, MeterAPIError(429, "busy", 3600.0)))
    # A Retry-After of 0 (a proxy's) is at least a quarter second: no spinning against a busy service.
    assert all(0.25 <= w <= 0.375 for w in _many(1, MeterAPIError(429, "busy", 0.0)))


def test_other_failures_double_and_never_come_before_retry_after() -> None:
    assert all(4.0 <= w <= 8.0 for w in _many(5, MeterAPIError(503, "down", 1.0)))
    assert all(5.0 <= w <= 7.5 for w in _many(1, MeterAPIError(503, "down", 5.0)))
    assert all(15.0 <= w <= 30.0 for w in _many(20, MeterNetworkError("refused")))
