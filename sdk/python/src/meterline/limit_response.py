"""The answer to a call blocked by a hard gate, for any web framework: JSON 429 with the blocking
dimension's figures, and ``Retry-After`` when it lifts by itself at a known time (its ``resets_at``); the
TypeScript client's Express and Fastify helpers give the same."""

from __future__ import annotations

import math
from typing import Any

from .clock import now as clock_now
from .errors import LimitExceededError
from .periods import iso


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
    """``{detail, gate_reason, usage_pct, current_value, limit_value, resets_at}``, the 429's JSON body:
    ``gate_reason`` the blocking dimension, ``resets_at`` (ISO 8601) when it lets a call through again, None
    when not by itself; and ``credits: {balance, low_at}`` only when the prepaid credits ran out."""
    r = err.result
    body: dict[str, Any] = {
        "detail": str(err),
        "gate_reason": r.gate_reason,
        "usage_pct": r.usage_pct,
        "current_value": r.current_value,
        "limit_value": r.limit_value,
        "resets_at": None if err.resets_at is None else iso(err.resets_at.timestamp()),
    }
    credits = err.credits
    if credits is not None:
        body["credits"] = {"balance": credits.balance, "low_at": credits.low_at}
    return body


def retry_after_seconds(err: LimitExceededError, now: float | None = None) -> int | None:
    """Whole seconds until the blocking dimension lifts (at least 1), or None when unknown."""
    if err.resets_at is None:
        return None
    left = err.resets_at.timestamp() - (clock_now() if now is None else now)
    return max(1, math.ceil(left))
