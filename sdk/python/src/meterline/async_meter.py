"""``AsyncMeter``: the client for asyncio code (FastAPI ``async def`` handlers, async workers), the core of
``Meter`` over httpx.AsyncClient. Every request (session loads, lease requests, the change poll, deliveries)
is awaited on the event loop: no thread does I/O. Deliveries run in one task, started on the loop of the
first call that needs it, so an AsyncMeter may be made at import time, before any loop runs. A client
belongs to one event loop."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, TypeVar

from .core import MeterCore, awaiting, guard_async, record_async, refresh_async, reserve_async
from .delivery import DeliveryTask
from .flow import Flow, Handle, Health, Request, ended
from .transport import AsyncTransport, Transport
from .types import StartResult

T = TypeVar("T")


class AsyncMeter(MeterCore):
    """``Meter``'s options and semantics; ``start``, ``guard``, ``reserve``, ``record``, ``record_manual``,
    ``portal_token``, ``refresh``, ``flush`` and ``shutdown`` are awaitable (``reserve`` also ``async with``);
    ``reserve_now``, ``state``, ``user``, ``stats`` and the callbacks are as on ``Meter``."""

    _transport: AsyncTransport
    _delivery: DeliveryTask

    def _open(self, base_url: str, api_key: str) -> None:
        self._transport = AsyncTransport(base_url, api_key, self.request_timeout)

    def _start_delivery(self) -> None:
        self._delivery = DeliveryTask(self._transport, self._tick_interval(), self._tick)

    def _reopen(self) -> None:
        self._transport.after_fork()

    @property
    def _http(self) -> AsyncTransport:
        return self._transport

    def _on_loop(self) -> None:
        super()._on_loop()
        self._delivery.ensure()

    def _spawn(self, flow: Flow[Any]) -> Handle:
        try:
            return asyncio.get_running_loop().create_task(self._transport.run(flow))
        except RuntimeError:  # no running loop (a call from another thread): nothing to run it on
            flow.close()
            return ended()

    async def _run_async(self, flow: Flow[T]) -> T:
        self._on_loop()
        return await self._transport.run(flow)

    def _close_at_exit(self) -> None:
        """At exit no loop runs: what is queued goes out over a blocking connection, the same steps."""
        http = Transport(self._transport.base, self._transport.api_key, self.request_timeout)
        with contextlib.closing(http):
            http.run(self._shutdown())

    async def start(self) -> StartResult:
        """``GET /health`` and an authenticated ``GET /config/changes``, at once, each within startup_timeout.
        Never raises."""
        self._on_loop()
        changes: Any
        health: Any
        changes, health = await asyncio.gather(
            self._transport.perform(Request("GET", "/config/changes", None, self.startup_timeout)),
            self._transport.perform(Health(self.startup_timeout)),
            return_exceptions=True,
        )
        return await self._transport.run(self._started(str(health), changes))

    guard = guard_async
    reserve = reserve_async
    record = record_async
    refresh = refresh_async
    record_manual = awaiting(MeterCore._manual, "record_manual")
    portal_token = awaiting(MeterCore._portal_token, "portal_token")
    flush = awaiting(MeterCore._flush, "flush")

    async def shutdown(self, timeout: float | None = None) -> bool:
        """Stops the delivery task, settles open integration calls, gives back leases, delivers the queue."""
        drained = await self._transport.run(self._shutdown(timeout))
        task = self._delivery.task
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            with contextlib.suppress(Exception):
                await task
        return drained
