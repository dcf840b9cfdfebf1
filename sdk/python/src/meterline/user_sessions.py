"""A user's sessions, over the session-window rule (sessions.py). Without a caller-given session
id a user has one library-kept session whose window counts from its start: after
session_timeout_minutes its id rotates and its cost starts again at 0. A caller-given session id
accrues its own cost while it is used; it is forgotten after a window without activity."""

from __future__ import annotations

import uuid

from .sessions import window_over


class Session:
    __slots__ = ("cost", "id", "last_active", "reserved", "started_at")

    def __init__(self, session_id: str, now: float) -> None:
        self.id = session_id
        self.started_at = now
        self.last_active = now
        self.cost = 0.0
        """Pre-call estimates of calls in flight."""
        self.reserved = 0.0


class Sessions:
    __slots__ = ("given", "own")

    def __init__(self, now: float) -> None:
        self.own = Session(str(uuid.uuid4()), now)
        self.given: dict[str, Session] | None = None

    def at(self, session_id: str | None, now: float, timeout: float) -> Session:
        """The session a call belongs to at ``now``, rotating the library's own when its window is over."""
        if session_id:
            if self.given is None:
                self.given = {}
            s = self.given.get(session_id)
            if s is None:
                s = Session(session_id, now)
                self.given[session_id] = s
        else:
            s = self.current(now, timeout)
        s.last_active = now
        return s

    def current(self, now: float, timeout: float) -> Session:
        if window_over(self.own.started_at, now, timeout):
            self.own = Session(str(uuid.uuid4()), now)
        return self.own

    def prune(self, now: float, timeout: float) -> None:
        """Forgets caller-given sessions idle for a whole window with nothing in flight."""
        if self.given is None:
            return
        for sid in [k for k, s in self.given.items() if s.reserved == 0 and now - s.last_active >= timeout]:
            del self.given[sid]
        if not self.given:
            self.given = None

    def idle(self, now: float, timeout: float) -> bool:
        if self.own.reserved != 0 or now - self.own.last_active < timeout:
            return False
        return all(s.reserved == 0 and now - s.last_active >= timeout for s in (self.given or {}).values())

    def clear(self, now: float) -> None:
        self.given = None
        self.own = Session(str(uuid.uuid4()), now)
