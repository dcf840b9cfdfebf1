"""Responses the provider answers before it runs them (OpenAI's ``background=True``): the answer says
``queued`` and carries no usage. Settling it then would record a call that may cost dollars as zero
tokens, so its call stays reserved until the same wrapped client reads the response in a final state (a
``retrieve``, plain or streamed, or a ``cancel``) and is settled then with the usage read."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol

from .calls import Call

#: A final response's usage: (input, output, tools); "nothing" when it reports none and ran to no use
#: (failed, cancelled: the reservation goes back, as for a failed request); "estimate" when it reports none
#: otherwise.
Final = tuple[int, int, list[str]] | str

#: A response not read back within this time (s) is settled with its estimate, as at shutdown: its
#: reservation is not held for good by a product that learns of the end another way (a provider webhook).
#: OpenAI keeps a background response for polling about ten minutes.
MAX_UNREAD_S = 3600.0


class BackgroundRoute(Protocol):
    def pending(self, result: Any) -> str | None:
        """The id of an answer that is a background response still to run, else None."""

    def read_of(self, options: Any) -> str | None:
        """The id of the response a request reads (a retrieve, a cancel), else None."""

    def final(self, response: Any) -> Final | None:
        """How a response read settles its call; None while it still runs."""

    def final_of(self, event: Any) -> Any:
        """The final response a stream event carries, else None."""


class BackgroundCalls:
    """The background calls of one wrapped client, by response id."""

    def __init__(self, route: BackgroundRoute, clock: Callable[[], float] = time.monotonic) -> None:
        self.route = route
        self._clock = clock
        self._calls: dict[str, tuple[Call, float]] = {}
        self._lock = threading.Lock()
        # When the oldest call held passes MAX_UNREAD_S: a sweep walks every call held, so it runs only then.
        self._due = math.inf

    def hold_pending(self, result: Any, call: Call) -> bool:
        """Holds ``call`` when ``result`` is a background response still to run (then it is not settled now)."""
        rid = self.route.pending(result)
        if rid is None:
            return False
        self.hold(rid, call)
        return True

    def hold_cut(self, rid: str | None, call: Call) -> bool:
        """Holds ``call`` when a stream left before its end names a background response still running (``rid``)."""
        if rid is None or not call.reservation.open or call.taken:
            return False
        self.hold(rid, call)
        return True

    def hold(self, rid: str, call: Call) -> None:
        """Keeps ``call`` reserved until response ``rid`` is read final."""
        now = self._clock()
        with self._lock:
            before = self._calls.get(rid)
            self._calls[rid] = (call, now)
            self._due = min(self._due, now + MAX_UNREAD_S)
        if before is not None and before[0] is not call:
            before[0].settle_seen()
        self._sweep_now_and_then()

    def _sweep_now_and_then(self) -> None:
        if self._clock() >= self._due:
            self.sweep()

    def sweep(self) -> None:
        """Settles with their estimate the calls whose responses went unread too long (checked as the client's
        background calls and reads come)."""
        now = self._clock()
        with self._lock:
            old = [rid for rid, (c, at) in self._calls.items() if now - at >= MAX_UNREAD_S or not c.reservation.open]
            calls = [self._calls.pop(rid)[0] for rid in old]
            self._due = min((at for _, at in self._calls.values()), default=math.inf) + MAX_UNREAD_S
        for c in calls:
            c.settle_seen()

    def read(self, options: Any, result: Any, is_async: bool) -> Any:
        """The answer of a request (its ``options``) not metered itself; when it reads a response held here, a
        final response settles the call held for it, and a stream settles it at its final event."""
        if not self._calls:
            return result
        self._sweep_now_and_then()
        rid = self.route.read_of(options)
        if rid is None or rid not in self._calls:
            return result
        if hasattr(type(result), "__stream__"):
            it = result._iterator
            result._iterator = self._aobserve(rid, it) if is_async else self._observe(rid, it)
        else:
            final = self.route.final(result)
            if final is not None:
                self._settle(rid, final)
        return result

    def _observe(self, rid: str, it: Iterator[Any]) -> Iterator[Any]:
        for event in it:
            self._event(rid, event)
            yield event

    async def _aobserve(self, rid: str, it: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for event in it:
            self._event(rid, event)
            yield event

    def _event(self, rid: str, event: Any) -> None:
        response = self.route.final_of(event)
        final = None if response is None else self.route.final(response)
        if final is not None:
            self._settle(rid, final)

    def _settle(self, rid: str, final: Final) -> None:
        with self._lock:
            held = self._calls.pop(rid, None)
        if held is None:
            return
        call = held[0]
        if final == "nothing":
            call.fail()
        elif final == "estimate":
            call.settle_seen()
        elif isinstance(final, tuple):
            call.settle(*final)
