"""What the model-client integrations share: the user, the reservation, settling each call exactly
once, stream pass-through, and the calls still open at shutdown."""

from __future__ import annotations

import contextlib
import math
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ..context import _current
from ..core import MeterCore, reserve_async
from ..errors import MeterTypeError, MissingUserError
from ..pricing import estimate_tokens
from ..reservation import Reservation


def get(obj: Any, key: str) -> Any:
    """A field of a pydantic model or of a dict (shapes, not classes: versions differ)."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def count(v: Any) -> int:
    return v if type(v) is int and v >= 0 else 0


class Who:
    __slots__ = ("session_id", "user_id")

    def __init__(self, user_id: str, session_id: str | None) -> None:
        self.user_id = user_id
        self.session_id = session_id


def who(user_id: str | None, session_id: str | None = None) -> Who:
    """The wrapper's user, else the enclosing ``meter.user(...)``'s; with neither, nothing is sent."""
    ctx = _current.get()
    uid = user_id or (ctx[0] if ctx else None)
    if not uid:
        raise MissingUserError(
            "no user for this model call: pass user_id to wrap() or the handler, "
            "or make the call inside `with meter.user(user_id):`"
        )
    return Who(uid, session_id or (ctx[1] if ctx else None))


class Call:
    """One metered model call: its reservation is settled exactly once (real usage, estimate, or released)."""

    __slots__ = (
        "__weakref__",
        "_lock",
        "chars",
        "input_tokens",
        "meta",
        "open_calls",
        "output_tokens",
        "prompt",
        "reservation",
        "response_id",
        "taken",
        "tools",
    )

    def __init__(self, reservation: Reservation, prompt: Any, meta: dict[str, Any], open_calls: OpenCalls) -> None:
        self.reservation = reservation
        self.prompt = prompt
        self.meta = meta
        self.open_calls = open_calls
        self._lock = threading.Lock()
        self.taken = False
        # What a stream showed so far.
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.tools: list[str] = []
        self.chars = 0
        # The id of the response a stream is for, where it names one (OpenAI's Responses API), until its final event.
        self.response_id: str | None = None
        open_calls.add(self)

    def _take(self) -> bool:
        """Claims the call for one settler: a stream's end and meter.shutdown() may reach it at once."""
        with self._lock:
            if self.taken or not self.reservation.open:
                return False
            self.taken = True
            self.open_calls.discard(self)
            return True

    def settle(self, input_tokens: int, output_tokens: int, tools: list[str]) -> None:
        if self._take():
            try:
                self.reservation.commit(
                    input_tokens=input_tokens, output_tokens=output_tokens, tool_calls=tools, metadata=self.meta
                )
            except BaseException:
                # A commit refused (what the provider reported fails a check) still gives its hold back.
                if self.reservation.open:
                    self.reservation.release()
                raise

    def settle_seen(self) -> None:
        """A stream left early or never finished: what the provider reported, else the input estimate and
        about one output token per four characters received."""
        if not self.reservation.open:
            return
        inp = self.input_tokens if self.input_tokens is not None else estimate_tokens(self.prompt)
        # What the provider reported may be a placeholder (Anthropic's message_start says 1): the text
        # received counts when it says more.
        out = max(self.output_tokens or 0, math.ceil(self.chars / 4))
        self.settle(inp, out, self.tools)

    def settle_ended(self) -> None:
        """A stream read to its end: the provider's final figures as reported (its last usage event came), else
        the input estimate and about one output token per four characters received."""
        if not self.reservation.open:
            return
        if self.output_tokens is None:
            self.settle_seen()
            return
        inp = self.input_tokens if self.input_tokens is not None else estimate_tokens(self.prompt)
        self.settle(inp, self.output_tokens, self.tools)

    def fail(self) -> None:
        """The provider answered with an error: nothing is recorded and the estimate is given back."""
        if self._take():
            self.reservation.release()


class OpenCalls:
    """Calls still open per meter; settled by meter.shutdown() before its final delivery."""

    def __init__(self) -> None:
        self.calls: weakref.WeakSet[Call] = weakref.WeakSet()
        self.lock = threading.Lock()

    def add(self, c: Call) -> None:
        with self.lock:
            self.calls.add(c)

    def discard(self, c: Call) -> None:
        with self.lock:
            self.calls.discard(c)

    def settle_all(self) -> None:
        with self.lock:
            calls = list(self.calls)
        for c in calls:
            c.settle_seen()


_registry: weakref.WeakKeyDictionary[MeterCore, OpenCalls] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def open_calls(meter: MeterCore) -> OpenCalls:
    with _registry_lock:
        oc = _registry.get(meter)
        if oc is None:
            oc = _registry[meter] = OpenCalls()
            meter.on_shutdown(oc.settle_all)
        return oc


def output_limit(*limits: Any) -> int | None:
    """The request's own output limit: the first of ``limits`` (its max_tokens and alike, by precedence)
    that is a token count. The estimate takes it in place of pre_call_buffer_tokens."""
    for limit in limits:
        if type(limit) is int and limit >= 0:
            return limit
    return None


class Starting:
    """A call about to be reserved: reserve_now() when that needs no wait (a warm user costs no thread hop or
    await), else the wrapper's own reserve (blocking, or awaited)."""

    __slots__ = ("calls", "kw", "meta", "meter", "prompt", "user_id")

    def __init__(
        self,
        meter: MeterCore,
        w: Who,
        model: str | None,
        prompt: Any,
        meta: dict[str, Any],
        calls: OpenCalls | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        self.meter = meter
        self.user_id = w.user_id
        self.prompt = prompt
        self.meta = meta
        self.calls = calls or open_calls(meter)
        self.kw: dict[str, Any] = {
            "model": model,
            "session_id": w.session_id,
            "prompt": prompt,
            "metadata": meta,
            "max_output_tokens": max_output_tokens,
        }

    def now(self) -> Call | None:
        r = self.meter.reserve_now(self.user_id, **self.kw)
        return None if r is None else self.call(r)

    def call(self, r: Reservation) -> Call:
        return Call(r, self.prompt, self.meta, self.calls)


def start(s: Starting) -> Call:
    """Reserves before the request leaves the process; a hard gate raises here and nothing is sent.
    ``meta`` is the event's metadata, shared by the calls of one wrapper (never changed)."""
    from ..meter import Meter

    if not isinstance(s.meter, Meter):
        raise MeterTypeError("a blocking model client needs a meterline.Meter (an AsyncMeter meters async clients)")
    return s.now() or s.call(s.meter.reserve(s.user_id, **s.kw))


async def astart(s: Starting) -> Call:
    return s.now() or s.call(await reserve_async(s.meter, s.user_id, **s.kw))


#: Holds a call whose stream was left before its end while its request runs on (a background response);
#: False when there is nothing to hold it for.
Hold = Callable[[Call], bool]


@contextlib.contextmanager
def seen_on_error(call: Call, hold: Hold | None = None) -> Iterator[None]:
    """A stream closed early or cut by an error once the provider started answering: what it showed (unless
    ``hold`` keeps it for later)."""
    try:
        yield
    except BaseException:
        if hold is None or not hold(call):
            call.settle_seen()
        raise


def metered_iter(
    inner: Iterator[Any],
    call: Call,
    observe: Callable[[Call, Any], bool],
    finish: Callable[[Call], None],
    hold: Hold | None = None,
) -> Iterator[Any]:
    """Passes a stream's items through; ``observe`` reads each and returns False for an item to hide."""
    with seen_on_error(call, hold):
        yield from (item for item in inner if observe(call, item))
    if hold is None or not hold(call):
        finish(call)


async def ametered_iter(
    inner: AsyncIterator[Any],
    call: Call,
    observe: Callable[[Call, Any], bool],
    finish: Callable[[Call], None],
    hold: Hold | None = None,
) -> AsyncIterator[Any]:
    with seen_on_error(call, hold):
        async for item in inner:
            if observe(call, item):
                yield item
    if hold is None or not hold(call):
        finish(call)
