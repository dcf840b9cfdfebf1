"""The I/O the client's logic asks for, as steps a generator yields (the pattern of ``httpx.Auth.auth_flow``):
the logic is written once, with no socket, thread or event loop in it, and each transport performs its steps,
``Transport`` blocking, ``AsyncTransport`` awaiting. A step's answer is sent back into the flow; a MeterError is
thrown into it where it yielded."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from concurrent.futures import CancelledError as FutureCancelled
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from .errors import MeterError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Request:
    """A request of the API: answers its parsed body, raises MeterAPIError / MeterNetworkError."""

    method: str
    path: str
    body: Any = None
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class Health:
    """``GET /health`` at ``base`` (default the client's): answers Transport.health()'s word, never raises."""

    timeout: float
    base: str | None = None


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class Wait:
    """Waits for a flow started in the background up to ``timeout`` (None: until it ends), without cancelling it:
    answers its result, or None when it has not ended by then."""

    handle: Handle
    timeout: float | None


Step = Request | Health | Sleep | Wait
Flow = Generator[Step, Any, T]


class Handle(Protocol):
    """A flow started in the background: a concurrent.futures.Future (Meter) or an asyncio.Task (AsyncMeter)."""

    def done(self) -> bool: ...

    def cancel(self) -> bool: ...


def running(h: Handle | None) -> bool:
    return h is not None and not h.done()


def started(h: Handle) -> bool:
    """The background flow has begun (a Future a load worker took up; a task, once made: no telling when it steps)."""
    return not isinstance(h, Future) or h.running() or h.done()


class Stepper(Generic[T]):
    """Drives a flow: the step it asks for next (None once it returned ``result``), given the last step's
    outcome: its answer, or the MeterError it met, thrown into the flow."""

    __slots__ = ("flow", "outcome", "result")

    def __init__(self, flow: Flow[T]) -> None:
        self.flow = flow
        self.outcome: Any = None
        self.result: T

    def next(self) -> Step | None:
        out = self.outcome
        try:
            return self.flow.throw(out) if isinstance(out, MeterError) else self.flow.send(out)
        except StopIteration as stop:
            self.result = stop.value
            return None


def done(value: T) -> Flow[T]:
    """A flow that asks for nothing."""
    return value
    yield  # a generator


def ended() -> Handle:
    """A handle of a flow that never ran (nothing is left to run it: the interpreter exits, or no loop runs)."""
    done: Future[Any] = Future()
    done.set_result(None)
    done.never_ran = True  # type: ignore[attr-defined]
    return done


def never_ran(h: Handle) -> bool:
    """The handle is ended()'s: nothing ran the flow (release_all then runs it in its own flow)."""
    return getattr(h, "never_ran", False) is True


def wait_blocking(h: Handle, timeout: float | None) -> Any:
    """Waits for a background flow of Meter (a Future) up to ``timeout``; None on timeout."""
    assert isinstance(h, Future)
    try:
        return h.result(timeout)
    except (FutureTimeout, FutureCancelled):
        # Dropped before it started (shutdown): it ran no more than a flow that timed out.
        return None


async def wait_async(h: Handle, timeout: float | None) -> Any:
    """Awaits a background flow (either kind of handle) up to ``timeout``, without cancelling it; None on timeout,
    or when it was cancelled (dropped by shutdown before it started, or its task cancelled)."""
    fut: asyncio.Future[Any] = asyncio.wrap_future(h) if isinstance(h, Future) else h  # type: ignore[assignment]
    # asyncio.wait neither cancels what it waits for at the timeout nor raises when that was cancelled: awaiting a
    # cancelled future would raise CancelledError into the caller's task as if the task itself were cancelled.
    finished, _ = await asyncio.wait({fut}, timeout=timeout)
    if not finished or fut.cancelled():
        return None
    return fut.result()
