"""Budget windows (pure), as rules/windows.ts defines them: the calendar window of a plan's
``limits`` entry in the plan's IANA time zone (weeks start on Monday; a day across a daylight-saving
change is 23 or 25 hours; an hour is 60 elapsed minutes from a local :00 or :30 mark), and rolling
windows of N minutes kept as buckets of N seconds. Times in epoch seconds; windows are [start, end).
Cases: rules/cases.json, section ``windows``."""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

CalendarWindow = Literal["minute", "hour", "day", "week", "month"]
CALENDAR_WINDOWS: tuple[CalendarWindow, ...] = ("minute", "hour", "day", "week", "month")
WINDOWS = (*CALENDAR_WINDOWS, "period", "rolling")
METRICS = ("spend", "tokens", "requests")
MAX_ROLLING_MINUTES = 44_640


@functools.lru_cache(maxsize=256)
def _zone(name: str) -> dt.tzinfo:
    return dt.timezone.utc if name == "UTC" else ZoneInfo(name)


def is_time_zone(name: str) -> bool:
    """True for a time zone name this runtime knows (IANA names; ``UTC``)."""
    if not isinstance(name, str) or not name or len(name) > 64:
        return False
    try:
        _zone(name)
        return True
    except (ValueError, KeyError, OSError):
        return False


def _wall_start(kind: CalendarWindow, d: dt.datetime) -> dt.datetime:
    if kind == "day":
        return d.replace(hour=0, minute=0, second=0, microsecond=0, fold=0)
    if kind == "week":
        day = d.replace(hour=0, minute=0, second=0, microsecond=0, fold=0)
        return (day.replace(tzinfo=None) - dt.timedelta(days=d.weekday())).replace(tzinfo=d.tzinfo)
    return d.replace(day=1, hour=0, minute=0, second=0, microsecond=0, fold=0)


def _wall_next(kind: CalendarWindow, start: dt.datetime) -> dt.datetime:
    naive = start.replace(tzinfo=None)
    if kind == "day":
        nxt = naive + dt.timedelta(days=1)
    elif kind == "week":
        nxt = naive + dt.timedelta(days=7)
    else:
        nxt = naive.replace(year=naive.year + (naive.month == 12), month=naive.month % 12 + 1)
    return nxt.replace(tzinfo=start.tzinfo, fold=0)


@functools.lru_cache(maxsize=1024)
def _calendar(kind: CalendarWindow, time_zone: str, key: float) -> tuple[float, float]:
    zone = _zone(time_zone)
    d = dt.datetime.fromtimestamp(key, zone)
    start = _wall_start(kind, d)
    # A wall time skipped by a change (midnight in Santiago) is read with the offset before the
    # change (fold=0): the window starts at the first instant of the day.
    return start.timestamp(), _wall_next(kind, start).timestamp()


def calendar_window(kind: CalendarWindow, t: float, time_zone: str) -> tuple[float, float]:
    """The calendar window of ``kind`` in ``time_zone`` that holds ``t``: (start, end) in epoch seconds."""
    if kind == "minute":
        start = math.floor(t / 60) * 60.0
        return start, start + 60
    if kind == "hour":
        offset = dt.datetime.fromtimestamp(t, _zone(time_zone)).utcoffset()
        local = t + (offset.total_seconds() if offset is not None else 0)
        start = t - (local % 3600)
        return start, start + 3600
    # Cached per UTC hour: most times asked fall in the current window.
    start, end = _calendar(kind, time_zone, math.floor(t / 3600) * 3600.0)
    if start <= t < end:
        return start, end
    return _calendar(kind, time_zone, float(math.floor(t)))


def bucket_seconds(duration_minutes: int) -> float:
    """Bucket width of a rolling window of ``duration_minutes``: 1/60 of it (N minutes, N seconds)."""
    return float(duration_minutes)


def rolling_bucket(duration_minutes: int, t: float) -> tuple[float, float]:
    """The bucket of a rolling window that holds ``t``."""
    w = bucket_seconds(duration_minutes)
    start = math.floor(t / w) * w
    return start, start + w


@dataclass
class Bucket:
    """One bucket of a rolling window: its start (epoch seconds) and what it counted (nano-dollars,
    tokens or requests)."""

    start: float
    used: int


def bucket_counts(b: Bucket, duration_minutes: int, now: float) -> bool:
    """A bucket counts while any part of it lies within the last ``duration_minutes``."""
    return b.start + bucket_seconds(duration_minutes) > now - duration_minutes * 60


def bucket_expires_at(b: Bucket, duration_minutes: int) -> float:
    return b.start + bucket_seconds(duration_minutes) + duration_minutes * 60


def rolling_used(buckets: Iterable[Bucket], duration_minutes: int, now: float) -> int:
    """Usage of a rolling window at ``now``: the sum of the buckets that still count."""
    return sum(b.used for b in buckets if bucket_counts(b, duration_minutes, now))


def rolling_resets_at(buckets: Iterable[Bucket], duration_minutes: int, hard_mark: float, now: float) -> float | None:
    """When usage falls below ``hard_mark`` with no further call (blocked), else when the oldest
    counted usage ages out; None when nothing counts or ``hard_mark`` is 0."""
    if hard_mark <= 0:
        return None
    live = sorted((b for b in buckets if b.used > 0 and bucket_counts(b, duration_minutes, now)), key=lambda b: b.start)
    if not live:
        return None
    used = sum(b.used for b in live)
    if used < hard_mark:
        return bucket_expires_at(live[0], duration_minutes)
    for b in live:
        used -= b.used
        if used < hard_mark:
            return bucket_expires_at(b, duration_minutes)
    return bucket_expires_at(live[-1], duration_minutes)


def dimension_key(metric: str, window: str, duration_minutes: int | None = None, model: str | None = None) -> str:
    """What a limit counts, over which window, for which model: the key its counters are kept under."""
    duration = str(duration_minutes or 0) if window == "rolling" else ""
    return f"{metric}:{window}:{duration}:{model or ''}"
