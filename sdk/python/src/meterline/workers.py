"""Meter's load workers: the flows it runs in the background (session loads, lease requests, the change poll) on a
few daemon threads, started as work comes.

Not a ThreadPoolExecutor: at the interpreter's exit Python runs every job queued on one, joining its threads, before
any atexit hook. During an outage each session reload takes up to request_timeout, so a queue of them held the exit
for minutes, past any shutdown_timeout, and the exit hook that delivers the usage ran only then, or never when an
orchestrator killed the process first. Exit joins no daemon thread: the exit hook drops what is queued
(``drop_queued``) and waits for what runs only within shutdown_timeout."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class Workers:
    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: deque[tuple[Future[Any], Callable[[], Any]]] = deque()
        self._threads = 0
        # Threads waiting for work.
        self._idle = 0

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        f: Future[T] = Future()
        item: tuple[Future[Any], Callable[[], Any]] = (f, lambda: fn(*args))
        with self._lock:
            self._queue.append(item)
            if self._idle > 0:
                self._wake.notify()
            # A thread more while the idle ones do not cover the queue (a woken one counts as idle until it runs).
            if self._idle >= len(self._queue) or self._threads >= self.size:
                return f
            self._threads += 1
            n = self._threads
        try:
            threading.Thread(target=self._run, name=f"{self.name}_{n}", daemon=True).start()
        except RuntimeError:
            # No thread starts any more (the interpreter is finalizing): the caller runs the work itself, unless a
            # thread took it up meanwhile.
            with self._lock:
                self._threads -= 1
                if item not in self._queue:
                    return f
                self._queue.remove(item)
            raise
        return f

    def drop_queued(self) -> None:
        """Cancels the work not started yet (its flow never runs: a waiter gets None, as at a timeout)."""
        with self._lock:
            queued = list(self._queue)
            self._queue.clear()
        for f, _ in queued:
            f.cancel()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue:
                    self._idle += 1
                    self._wake.wait()
                    self._idle -= 1
                f, job = self._queue.popleft()
            if not f.set_running_or_notify_cancel():
                continue
            try:
                result = job()
            except BaseException as err:
                f.set_exception(err)
            else:
                f.set_result(result)
            # Not kept alive by this frame while the thread waits.
            del f, job
