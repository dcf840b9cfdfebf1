"""Billing periods (pure), as rules/periods.ts defines them: the calendar month (UTC) of a moment,
and the roll-on of a dated window by its own length. Cases: rules/cases.json."""

from __future__ import annotations

import datetime as dt
import math
import time


def calendar_month(t: float) -> tuple[float, float]:
    """The calendar month (UTC) holding ``t``: its start and its exclusive end, in epoch seconds."""
    d = dt.datetime.fromtimestamp(t, dt.timezone.utc)
    start = dt.datetime(d.year, d.month, 1, tzinfo=dt.timezone.utc)
    end = dt.datetime(d.year + (d.month == 12), d.month % 12 + 1, 1, tzinfo=dt.timezone.utc)
    return start.timestamp(), end.timestamp()


def roll_on(start: float, end: float, t: float) -> tuple[float, float]:
    """The window as long as [start, end) that holds ``t`` (at or after ``start``), counting on from
    ``start``, as billing subscriptions renew. Epoch seconds."""
    length = max(end - start, 0.001)
    k = math.floor((t - start) / length)
    return start + k * length, start + (k + 1) * length


def iso(t: float) -> str:
    """UTC, milliseconds, ``Z``: the service's own form (strftime: several times cheaper than datetime)."""
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t))}.{int(t * 1000) % 1000:03d}Z"


def parse_time(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
