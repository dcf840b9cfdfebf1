"""``Meter``: the blocking client. Its I/O runs over httpx.Client: session loads and lease requests on a small
pool of load workers, deliveries on one daemon thread, the rest in the calling thread. Its ``a``-prefixed
methods serve async code: ``aguard``/``areserve``/``arecord`` are the core's awaitable calls (no thread hop for
a loaded user), the others run the blocking method in a thread (``asyncio.to_thread``). ``AsyncMeter``
(async_meter.py) does all its I/O on the event loop."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Concatenate, ParamSpec, TypeVar

from .admission import LEASE_ROUNDS
from .core import MeterCore
from .delivery import DeliveryThread
from .flow import Flow, Handle, Health, Request
from .recording import Metadata
from .reservation import Reservation
from .state import UserEntry
from .transport import Transport
from .types import GuardResult, ManualEvent, PortalToken, StartResult, UsageEvent
from .validate import check_usage, check_user

P = ParamSpec("P")
T = TypeVar("T")


def _blocking(flow: Callable[Concatenate[MeterCore, P], Flow[T]]) -> Callable[Concatenate[Meter, P], T]:
    """A method that runs the core's flow in the calling thread."""

    @functools.wraps(flow)
    def run(self: Meter, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._transport.run(flow(self, *args, **kwargs))

    return run


class Meter(MeterCore):
    """Enforces each user's plan in this process and meters what the calls use. Thread-safe."""

    _transport: Transport
    _executor: ThreadPoolExecutor
    _delivery: DeliveryThread

    def _open(self, base_url: str, api_key: str) -> None:
        self._transport = Transport(base_url, api_key, self.request_timeout)
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="meter-load")

    def _start_delivery(self) -> None:
        self._delivery = DeliveryThread(self._transport, self.flush_interval, self._tick)

    def _reopen(self) -> None:
        self._transport.after_fork()
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="meter-load")

    @property
    def _http(self) -> Transport:
        return self._transport

    def _spawn(self, flow: Flow[Any]) -> Handle:
        try:
            return self._executor.submit(self._transport.run, flow)
        except RuntimeError:  # the executor is gone (interpreter exit)
            flow.close()
            done: Future[Any] = Future()
            done.set_result(None)
            return done

    def _close_at_exit(self) -> None:
        self.shutdown()

    def _entry(self, user_id: str) -> UserEntry:
        """The user's entry, its view waited for up to startup_timeout, and not at all while the service is known
        to be unreachable: then the user starts with permissive defaults (or fail_closed) until it arrives."""
        check_user(user_id)
        e = self._ready(user_id)
        if e is not None:
            return e
        e, h, rollover = self._begin_load(user_id)
        if self._transport.reachable:
            _wait(h, self.startup_timeout)
        return self._end_load(e, rollover)

    # ---- the API ----

    def start(self) -> StartResult:
        """``GET /health`` and an authenticated ``GET /config/changes`` (which also gives the change
        marker), at once, each within startup_timeout. Never raises."""
        # Both at once: a busy service answers within startup_timeout, not twice that.
        key = self._executor.submit(
            self._transport.perform, Request("GET", "/config/changes", None, self.startup_timeout)
        )
        health = self._transport.perform(Health(self.startup_timeout))
        try:
            changes = key.result(self.startup_timeout + 1)
        except BaseException as err:
            changes = err
        return self._transport.run(self._started(health, changes))

    def guard(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: Metadata = None,
        max_output_tokens: int | None = None,
    ) -> GuardResult:
        """Checks a coming call. Raises LimitExceededError on a hard gate when blocking."""
        return self._check(self._entry(user_id), model, session_id, input_tokens, prompt, metadata, max_output_tokens)

    def reserve(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: Metadata = None,
        max_output_tokens: int | None = None,
    ) -> Reservation:
        """guard() and, with pre_call_estimate, the estimate held against the limits in the same step."""
        e = self._entry(user_id)
        input_tokens, need = self._lease_plan(e, model, input_tokens, prompt, max_output_tokens)
        for _ in range(LEASE_ROUNDS if need is not None else 0):
            assert self._leases is not None and need is not None
            asking = self._leases.asking(e, need)
            if asking is None or not _result(asking):
                break
        return self._reserve_now(e, model, session_id, input_tokens, prompt, metadata, max_output_tokens)

    def record(
        self,
        user_id: str,
        model: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        tool_calls: list[str] | None = None,
        session_id: str | None = None,
        metadata: Metadata = None,
    ) -> UsageEvent:
        """Meters a call that already ran."""
        check_user(user_id)
        check_usage(input_tokens, output_tokens, tool_calls, metadata, session_id, model)
        return self._record(self._entry(user_id), model, input_tokens, output_tokens, tool_calls, session_id, metadata)

    def refresh(self, user_id: str) -> bool:
        """Reloads the user's session view now (a plan or subscription just changed). True when it loaded."""
        e, h = self._refresh_now(user_id)
        if e is None or h is None:
            return self._entry(user_id).loaded
        return _wait(h, self.request_timeout + 1) and e.loaded and not e.load_failed

    record_manual = _blocking(MeterCore._manual)
    portal_token = _blocking(MeterCore._portal_token)
    flush = _blocking(MeterCore._flush)
    shutdown = _blocking(MeterCore._shutdown)

    # ---- for async code ----

    aguard = MeterCore._guard_async
    areserve = MeterCore._reserve_cm
    arecord = MeterCore._record_async

    async def astart(self) -> StartResult:
        return await asyncio.to_thread(self.start)

    async def arecord_manual(self, user_id: str, **kwargs: Any) -> ManualEvent:
        return await asyncio.to_thread(lambda: self.record_manual(user_id, **kwargs))

    async def aportal_token(self, user_id: str, ttl_seconds: int | None = None) -> PortalToken:
        return await asyncio.to_thread(self.portal_token, user_id, ttl_seconds)

    async def arefresh(self, user_id: str) -> bool:
        return await asyncio.to_thread(self.refresh, user_id)

    async def aflush(self, timeout: float | None = None) -> bool:
        return await asyncio.to_thread(self.flush, timeout)

    async def ashutdown(self, timeout: float | None = None) -> bool:
        return await asyncio.to_thread(self.shutdown, timeout)


def _wait(h: Handle, timeout: float) -> bool:
    """Waits for a background flow up to ``timeout``; False when it has not ended by then."""
    assert isinstance(h, Future)
    try:
        h.result(timeout)
    except FutureTimeout:
        return False
    return True


def _result(h: Handle) -> Any:
    assert isinstance(h, Future)
    return h.result()
