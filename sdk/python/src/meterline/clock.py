"""The time the library reads for gates, windows and usage timestamps. Tests of calendar windows move it
(``set_clock``) to cross a midnight without waiting for one; nothing else sets it. Not part of the
public API."""

from __future__ import annotations

import time
from collections.abc import Callable

_read: Callable[[], float] = time.time


def now() -> float:
    """Epoch seconds."""
    return _read()


def set_clock(clock: Callable[[], float] | None = None) -> None:
    """Testing only: the library's clock (epoch seconds), or time.time again with no argument."""
    global _read
    _read = clock or time.time
