"""``Meter``: the blocking client. Its I/O runs over httpx.Client: session loads and lease requests on a few
load workers (daemon threads, workers.py), deliveries on one daemon thread, the rest in the calling thread. Its
``a``-prefixed methods serve async code: ``aguard``/``areserve``/``arecord`` are the core's awaitable calls (no
thread hop for a loaded user), the others run the blocking method in a thread (``asyncio.to_thread``).
``AsyncMeter`` (async_meter.py) does all its I/O on the event loop."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from .core import MeterCore, guard_async, public, record_async, renamed, reserve_async
from .delivery import DeliveryThread
from .flow import Flow, Handle, Health, Request, Stepper, Wait, ended, wait_async
from .transport import Transport
from .types import PortalToken, StartResult
from .workers import Workers

P = ParamSpec("P")
T = TypeVar("T")


def _blocking(flow: Callable[Concatenate[MeterCore, P], Flow[T]], name: str) -> Callable[Concatenate[Meter, P], T]:
    """A method that runs the core's flow in the calling thread."""

    @functools.wraps(flow)
    def run(self: Meter, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._transport.run(flow(self, *args, **kwargs))

    return public(run, flow, name)


def _in_thread(method: Callable[Concatenate[Meter, P], T]) -> Callable[Concatenate[Meter, P], Coroutine[Any, Any, T]]:
    """A blocking method run in a worker thread: the same parameters, awaitable."""

    @functools.wraps(method)
    async def run(self: Meter, /, *args: P.args, **kwargs: P.kwargs) -> T:
        self._on_loop()
        return await asyncio.to_thread(method, self, *args, **kwargs)

    return run


class Meter(MeterCore):
    """Enforces each user's plan in this process and meters what the calls use. Thread-safe."""

    _transport: Transport
    _executor: Workers
    _delivery: DeliveryThread

    def _open(self, base_url: str, api_key: str) -> None:
        self._transport = Transport(base_url, api_key, self.request_timeout)
        self._executor = Workers(4, "meter-load")

    def _start_delivery(self) -> None:
        self._delivery = DeliveryThread(self._transport, self._tick_interval(), self._tick)

    def _reopen(self) -> None:
        self._transport.after_fork()
        self._executor = Workers(4, "meter-load")

    @property
    def _http(self) -> Transport:
        return self._transport

    def _spawn(self, flow: Flow[Any]) -> Handle:
        try:
            return self._executor.submit(self._transport.run, flow)
        except RuntimeError:  # no thread can start (the interpreter is finalizing)
            flow.close()
            return ended()

    def _drop_queued(self) -> None:
        self._executor.drop_queued()

    def _run(self, flow: Flow[T]) -> T:
        return self._transport.run(flow)

    async def _run_async(self, flow: Flow[T]) -> T:
        self._on_loop()
        s = Stepper(flow)
        while (step := s.next()) is not None:
            if isinstance(step, Wait):
                s.outcome = await wait_async(step.handle, step.timeout)
            else:
                s.outcome = await asyncio.to_thread(self._transport.perform, step)
        return s.result

    def _close_at_exit(self) -> None:
        self.shutdown()

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

    guard = renamed(MeterCore._guard, "guard")
    record = renamed(MeterCore._record_call, "record")
    reserve = _blocking(MeterCore._reserve, "reserve")
    refresh = _blocking(MeterCore._refresh_user, "refresh")
    record_manual = _blocking(MeterCore._manual, "record_manual")
    portal_token = _blocking(MeterCore._portal_token, "portal_token")
    flush = _blocking(MeterCore._flush, "flush")
    shutdown = _blocking(MeterCore._shutdown, "shutdown")

    # ---- for async code ----

    aguard = renamed(guard_async, "aguard")
    areserve = renamed(reserve_async, "areserve")
    arecord = renamed(record_async, "arecord")

    async def astart(self) -> StartResult:
        self._on_loop()
        return await asyncio.to_thread(self.start)

    arecord_manual = _in_thread(record_manual)

    async def aportal_token(self, user_id: str, ttl_seconds: int | None = None) -> PortalToken:
        self._on_loop()
        return await asyncio.to_thread(self.portal_token, user_id, ttl_seconds)

    async def arefresh(self, user_id: str) -> bool:
        self._on_loop()
        return await asyncio.to_thread(self.refresh, user_id)

    async def aflush(self, timeout: float | None = None) -> bool:
        self._on_loop()
        return await asyncio.to_thread(self.flush, timeout)

    async def ashutdown(self, timeout: float | None = None) -> bool:
        self._on_loop()
        return await asyncio.to_thread(self.shutdown, timeout)
