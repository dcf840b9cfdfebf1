"""The user (and session) of the current context, for integrations that are not handed a user id."""

from __future__ import annotations

from contextvars import ContextVar

_current: ContextVar[tuple[str, str | None] | None] = ContextVar("meter_user", default=None)


def current_user() -> str | None:
    """The user id set by the closest enclosing ``with meter.user(...)``, or None."""
    v = _current.get()
    return None if v is None else v[0]


def current_session() -> str | None:
    """The session id set by the closest enclosing ``with meter.user(..., session_id=...)``, or None."""
    v = _current.get()
    return None if v is None else v[1]
