"""Session windows (pure), as rules/sessions.ts defines them; a user's sessions are held by
user_sessions.py. Cases: rules/cases.json."""

from __future__ import annotations


def window_over(since: float, now: float, window: float) -> bool:
    """Whether the window of ``window`` seconds that began at ``since`` is over at ``now`` (the end is exclusive)."""
    return now - since >= window
