"""The unread bound of background responses (integrations/background.py), on a clock the test moves."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from meterline.integrations.background import MAX_UNREAD_S, BackgroundCalls
from meterline.integrations.openai import _Background, _response_observer


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


def test_a_stream_names_its_response_until_the_final_event_with_usage_or_without() -> None:
    # A background stream left before that event is held for the response; one that saw it is not.
    observe = _response_observer()
    call: Any = SimpleNamespace(response_id=None, chars=0, tools=[], input_tokens=None, output_tokens=None)
    observe(call, {"type": "response.created", "response": {"id": "resp_1", "status": "queued"}})
    assert call.response_id == "resp_1"
    observe(call, {"type": "response.failed", "response": {"id": "resp_1", "status": "failed", "usage": None}})
    assert call.response_id is None and call.output_tokens is None
