"""Input checks of the public API. They raise TypeError/ValueError at the call site: a wrong
argument is a bug to fix, and an event the service would refuse must not be queued."""

from __future__ import annotations

import json
import math
from typing import Any

from .errors import MeterTypeError, MeterValueError


def check_user(user_id: Any) -> None:
    if not isinstance(user_id, str) or not 0 < len(user_id) <= 255:
        raise MeterTypeError("user_id must be a string of 1 to 255 characters (the product's external_user_id)")


def check_session_id(where: str, session_id: Any) -> None:
    """A session id the service would refuse is a bug at the call site (as the TypeScript client's)."""
    if session_id is not None and (not isinstance(session_id, str) or not 0 < len(session_id) <= 255):
        raise MeterTypeError(f"{where}: session_id must be a string of 1 to 255 characters")


def _count(name: str, v: Any) -> None:
    if type(v) is not int or v < 0:
        raise MeterTypeError(f"{name} must be a non-negative integer")


def _optional_string(name: str, v: Any) -> None:
    if v is not None and (not isinstance(v, str) or len(v) > 255):
        raise MeterTypeError(f"{name} must be a string of at most 255 characters")


def check_metadata(metadata: Any) -> None:
    """Checked where an event's metadata is given (record, guard, reserve, a wrapper), not when its batch is
    sent: one value JSON cannot carry (a datetime, a UUID, NaN) would otherwise fail the batch of every event
    queued with it."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise MeterTypeError("metadata must be a dict")
    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise MeterTypeError(
            f"metadata must hold JSON values only (str, number, bool, None, list, dict): {err}"
        ) from None


def own_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """A queued event's own copy of metadata that check_metadata passed: what the caller (or a callback)
    changes afterwards is not sent, so every resend of the event carries what it carried first."""
    if not metadata:
        return {}
    copied: dict[str, Any] = json.loads(json.dumps(metadata, allow_nan=False))
    return copied


def check_usage(
    input_tokens: Any, output_tokens: Any, tool_calls: Any, metadata: Any, session_id: Any, model: Any
) -> None:
    _count("input_tokens", input_tokens)
    _count("output_tokens", output_tokens)
    if tool_calls is not None and not (
        isinstance(tool_calls, (list, tuple)) and all(isinstance(t, str) and len(t) <= 255 for t in tool_calls)
    ):
        raise MeterTypeError("tool_calls must be a list of strings")
    check_metadata(metadata)
    _optional_string("session_id", session_id)
    _optional_string("model", model)


def check_manual(
    cost: Any,
    input_tokens: Any,
    output_tokens: Any,
    description: Any,
    tool_calls: Any,
    metadata: Any,
    session_id: Any,
    model: Any,
    idempotency_key: Any,
) -> None:
    check_usage(input_tokens, output_tokens, tool_calls, metadata, session_id, model)
    if cost is not None and (
        isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) or cost < 0
    ):
        raise MeterTypeError("cost must be a non-negative number")
    if description is not None and not isinstance(description, str):
        raise MeterTypeError("description must be a string")
    # An empty key would dedupe nothing (the service refuses it): a caller's key that came out empty is a bug to see.
    if idempotency_key is not None and (
        not isinstance(idempotency_key, str) or not idempotency_key or len(idempotency_key) > 255
    ):
        raise MeterTypeError("idempotency_key must be a string of 1 to 255 characters")


def positive(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise MeterValueError(f"Meter: {name} must be a positive number, got {v!r}")
    return float(v)
