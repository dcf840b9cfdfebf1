"""The unread bound of background responses (integrations/background.py), on a clock the test moves."""

from __future__ import annotations

from typing import Any

from meterline.integrations.background import MAX_UNREAD_S, BackgroundCalls
from meterline.integrations.openai import _Background


class _Reservation:
    open = True


class _Call:
    """What BackgroundCalls asks of a call: whether its reservation is open, and how it was settled."""

    def __init__(self) -> None:
        self.reservation = _Reservation()
        self.settled: list[Any] = []

    def settle_seen(self) -> None:
        self.settled.append("estimate")
        self.reservation.open = False

    def settle(self, *usage: Any) -> None:
        self.settled.append(usage)
        self.reservation.open = False

    def fail(self) -> None:
        self.settled.append("released")
        self.reservation.open = False


def test_a_response_unread_past_the_bound_is_settled_with_its_estimate_and_read_later_counts_nothing() -> None:
    now = [0.0]
    calls = BackgroundCalls(_Background(), clock=lambda: now[0])
    old, young = _Call(), _Call()
    assert calls.hold_pending({"id": "resp_old", "background": True, "status": "queued"}, old)  # type: ignore[arg-type]
    now[0] = MAX_UNREAD_S - 1
    assert calls.hold_pending({"id": "resp_young", "background": True, "status": "in_progress"}, young)  # type: ignore[arg-type]
    assert old.settled == [] and young.settled == []

    now[0] = MAX_UNREAD_S
    done = {"id": "resp_old", "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 7}, "output": []}
    options = type("Options", (), {"method": "get", "url": "/responses/resp_old"})()
    calls.read(options, done, False)
    assert old.settled == ["estimate"], "past the bound: settled with its estimate, and the late read adds nothing"

    young_options = type("Options", (), {"method": "get", "url": "/responses/resp_young"})()
    calls.read(young_options, {**done, "id": "resp_young"}, False)
    assert young.settled == [(5, 7, [])]


def test_an_answer_that_is_not_a_running_background_response_is_not_held() -> None:
    calls = BackgroundCalls(_Background())
    call = _Call()
    assert not calls.hold_pending({"id": "r", "background": True, "status": "completed"}, call)  # type: ignore[arg-type]
    assert not calls.hold_pending({"id": "r", "background": False, "status": "queued"}, call)  # type: ignore[arg-type]
    assert not calls.hold_pending({"id": "r", "status": "in_progress"}, call)  # type: ignore[arg-type]
    assert call.settled == []
