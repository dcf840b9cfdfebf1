"""What runs the client's tick (the change poll, the idle sweep, a delivery pass: one flow, ``MeterCore._tick``)
every flush interval, or when woken: a daemon thread for ``Meter``, an asyncio task for ``AsyncMeter``."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from .flow import Flow
from .transport import AsyncTransport, Transport


class Delivery:
    def __init__(self, interval: float, tick: Callable[[], Flow[None]]) -> None:
        self.interval = interval
        self.tick = tick
        self.stopped = False

    def stop(self) -> None:
        raise NotImplementedError


class DeliveryThread(Delivery):
    def __init__(self, transport: Transport, interval: float, tick: Callable[[], Flow[None]]) -> None:
        super().__init__(interval, tick)
        self.transport = transport
        self.wake = threading.Event()
        self.thread = threading.Thread(target=self._run, name="meter-delivery", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped:
            self.wake.wait(self.interval)
            self.wake.clear()
            if not self.stopped:
                self.transport.run(self.tick())

    def stop(self) -> None:
        self.stopped = True
        self.wake.set()


class DeliveryTask(Delivery):
    """Started on the event loop of the first call that needs it (an AsyncMeter may be made before any loop runs)."""

    def __init__(self, transport: AsyncTransport, interval: float, tick: Callable[[], Flow[None]]) -> None:
        super().__init__(interval, tick)
        self.transport = transport
        self.wake: asyncio.Event | None = None
        self.task: asyncio.Task[Any] | None = None

    def ensure(self) -> None:
        """Starts the task on the running loop, once (again on another loop: the previous one is gone)."""
        if self.stopped:
            return
        loop = asyncio.get_running_loop()
        if self.task is None or self.task.get_loop() is not loop:
            self.wake = asyncio.Event()
            self.task = loop.create_task(self._run(self.wake), name="meter-delivery")

    async def _run(self, wake: asyncio.Event) -> None:
        while not self.stopped:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), self.interval)
            wake.clear()
            if not self.stopped:
                await self.transport.run(self.tick())

    def stop(self) -> None:
        self.stopped = True
        if self.wake is not None and self.task is not None and not self.task.done():
            with contextlib.suppress(RuntimeError):  # its loop is closed
                self.task.get_loop().call_soon_threadsafe(self.wake.set)
