"""Input checks of the public API. They raise TypeError/ValueError at the call site: a wrong
argument is a bug to fix, and an event the service would refuse must not be queued."""

from __future__ import annotations

import json
import math
import threading
from typing import Any

from .errors import MeterTypeError, MeterValueError

# The service's bounds of one event (rules/event-bounds.ts; rules/cases.json's event_bounds holds both libraries
# to them): what it would refuse at delivery is refused here, never queued to be lost.
MAX_EVENT_TOKENS = 1_000_000_000
METADATA_MAX_DEPTH = 16


def external_id_problem(external_id: str) -> str | None:
    """Why the service refuses an external user (or team) id beyond its length, or None: "." and ".." cannot be a
    URL path segment, and a lone surrogate becomes U+FFFD in UTF-8 (two ids would name one user)."""
    if external_id in (".", ".."):
        return 'must not be "." or ".."'
    if any("\ud800" <= c <= "\udfff" for c in external_id):
        return "must not contain unpaired surrogates (U+D800-U+DFFF)"
    return None


def json_depth(value: Any, limit: float = math.inf) -> int:
    """How deep a JSON value nests (a scalar is 0, ``{}`` and ``[]`` are 1), counted no further than past ``limit``."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        v, depth = pending.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, (list, tuple)):
            children = v
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            break
        pending.extend((c, depth + 1) for c in children)
    return deepest


def check_user(user_id: Any) -> None:
    if not isinstance(user_id, str) or not 0 < len(user_id) <= 255:
        raise MeterTypeError("user_id must be a string of 1 to 255 characters (the product's external_user_id)")
    problem = external_id_problem(user_id)
    if problem is not None:
        raise MeterTypeError(f"user_id {problem} (the service refuses such an external_user_id)")


def check_session_id(where: str, session_id: Any) -> None:
    """A session id the service would refuse is a bug at the call site (as the TypeScript client's)."""
    if session_id is not None and (not isinstance(session_id, str) or not 0 < len(session_id) <= 255):
        raise MeterTypeError(f"{where}: session_id must be a string of 1 to 255 characters")


def _count(name: str, v: Any) -> None:
    if type(v) is not int or not 0 <= v <= MAX_EVENT_TOKENS:
        raise MeterTypeError(f"{name} must be an integer of 0 to {MAX_EVENT_TOKENS:,}")


def _optional_string(name: str, v: Any) -> None:
    if v is not None and (not isinstance(v, str) or len(v) > 255):
        raise MeterTypeError(f"{name} must be a string of at most 255 characters")


def check_names(model: Any, session_id: Any) -> None:
    """A call's model and session as its events carry them (a gate event's, the usage a reservation commits): the
    service refuses more than 255 characters at delivery, so guard and reserve refuse them here, as record() does
    (the TypeScript client's checkNames; a wrapper's session_id: check_session_id)."""
    _optional_string("session_id", session_id)
    _optional_string("model", model)


def check_estimate(model: Any, session_id: Any, input_tokens: Any, max_output_tokens: Any, metadata: Any) -> None:
    """The arguments of guard(), reserve() and reserve_now(), checked before any wait for the user's view: a bad
    argument fails at the call whether or not it would wait."""
    check_metadata(metadata)
    check_names(model, session_id)
    if input_tokens is not None and (type(input_tokens) is not int or input_tokens < 0):
        raise MeterTypeError("input_tokens must be a non-negative integer")
    if max_output_tokens is not None and (type(max_output_tokens) is not int or max_output_tokens < 0):
        raise MeterTypeError("max_output_tokens must be a non-negative integer")


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
    if json_depth(metadata, METADATA_MAX_DEPTH) > METADATA_MAX_DEPTH:
        raise MeterTypeError(f"metadata must not nest deeper than {METADATA_MAX_DEPTH} levels (itself the first)")


def own_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """A queued event's own copy of metadata that check_metadata passed: what the caller (or a callback)
    changes afterwards is not sent, so every resend of the event carries what it carried first."""
    if not metadata:
        return {}
    copied: dict[str, Any] = json.loads(json.dumps(metadata, allow_nan=False))
    return copied


def json_copy(value: Any) -> Any:
    """A copy of a JSON value own_metadata made (dicts, lists and scalars): what its holder changes afterwards does
    not change the original. Faster than a JSON round trip, which record() would pay again for each event."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value


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
    check_names(model, session_id)


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


def flag(name: str, v: Any) -> bool:
    """A yes/no option: a bool, not a string from the environment ("false" is truthy)."""
    if not isinstance(v, bool):
        hint = ' (a string: parse it, e.g. os.environ["X"] == "true")' if isinstance(v, str) else ""
        raise MeterTypeError(f"Meter: {name} must be True or False, got {v!r}{hint}")
    return v


def positive(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise MeterValueError(f"Meter: {name} must be a positive number, got {v!r}")
    return float(v)


def positive_int(name: str, v: Any, most: int | None = None) -> int:
    """A count option: a whole number from 1 (to ``most``), refused otherwise, never truncated nor clamped (0.5
    events a queue would hold none; 0.5 calls a lease would divide by zero later), as TypeScript's positiveInt."""
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0 or (most is not None and v > most):
        upto = "" if most is None else f" of at most {most:,}"
        raise MeterValueError(f"Meter: {name} must be a positive whole number{upto}, got {v!r}")
    return v


def call_timeout(name: str, v: Any) -> float | None:
    """A call's own time limit (flush, shutdown): None (the client's shutdown_timeout) or seconds, 0 or more. NaN
    made every request's deadline fail and flush() never return; as TypeScript's callTimeoutMs."""
    if v is None:
        return None
    # A longer wait than a lock can take overflows (threading.TIMEOUT_MAX, about 292 years).
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= threading.TIMEOUT_MAX:
        raise MeterTypeError(f"{name}: timeout must be a number of seconds, 0 or more, got {v!r}")
    return float(v)
