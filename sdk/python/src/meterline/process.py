"""Process hooks of every client, over weak references (a dropped client is not kept alive): at exit, what is
queued is delivered, bounded by each client's shutdown_timeout (a down service never hangs exit); around
os.fork(), no client's state is copied half-written, and the child gets its own workers and an empty queue."""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import weakref
from typing import Protocol


class Hooked(Protocol):
    _closed: bool
    _lock: threading.RLock

    def _close_at_exit(self) -> None: ...
    def _exit_delivers(self) -> bool: ...
    def _after_fork_in_child(self) -> None: ...


_clients: weakref.WeakSet[Hooked] = weakref.WeakSet()
_hooks_lock = threading.Lock()
_hooked = False
_held_locks: list[threading.RLock] = []


def register(client: Hooked) -> None:
    global _hooked
    with _hooks_lock:
        _clients.add(client)
        if _hooked:
            return
        _hooked = True
    atexit.register(_at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent, after_in_child=_after_fork_child)


def _at_exit() -> None:
    for c in list(_clients):
        # A client shut down already still has events recorded after its shutdown() to deliver.
        if c._exit_delivers():
            with contextlib.suppress(Exception):
                c._close_at_exit()


def _before_fork() -> None:
    for c in list(_clients):
        c._lock.acquire()
        _held_locks.append(c._lock)


def _after_fork_parent() -> None:
    while _held_locks:
        _held_locks.pop().release()


def _after_fork_child() -> None:
    _held_locks.clear()
    for c in list(_clients):
        c._after_fork_in_child()
