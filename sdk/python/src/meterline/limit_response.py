"""The answer to a call blocked by a hard gate, for any web framework: JSON 429 with the gate's
figures, and ``Retry-After`` when the limit lifts by itself at a known time (the TypeScript
client's Express and Fastify helpers give the same)."""

from __future__ import annotations

import math
import time
from typing import Any

from .errors import LimitExceededError


def limit_of(err: BaseException | None) -> LimitExceededError | None:
    """The LimitExceededError behind ``err``: the error itself, or one a model client wrapped as its
    ``__cause__`` (or ``__context__``)."""
    e: BaseException | None = err
    for _ in range(5):
        if e is None:
            return None
        if isinstance(e, LimitExceededError):
            return e
        e = e.__cause__ or e.__context__
    return None


def limit_body(err: LimitExceededError) -> dict[str, Any]:
    """``{detail, gate_reason, usage_pct, current_value, limit_value}``, the 429's JSON body."""
    r = err.result
    return {
        "detail": str(err),
        "gate_reason": r.gate_reason,
        "usage_pct": r.usage_pct,
        "current_value": r.current_value,
        "limit_value": r.limit_value,
    }


def retry_after_seconds(err: LimitExceededError, now: float | None = None) -> int | None:
    """Whole seconds until the limit lifts (at least 1), or None when unknown."""
    if err.resets_at is None:
        return None
    left = err.resets_at.timestamp() - (time.time() if now is None else now)
    return max(1, math.ceil(left))
