"""What one entry of a plan's ``limits`` has counted for a user, as the client keeps it between session
views (BUDGETS.md section 2), as rules/counters.ts defines it: the current window of a calendar or
``period`` limit, the buckets of a rolling one, and what calls in flight hold. Amounts are integers:
nano-dollars for spend, tokens, requests; times in epoch seconds. Windows roll here, without the service:
a calendar window at its end (the next one from calendar_window in the plan's time zone), a rolling window
as its buckets age out."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .money import _round_half_up, to_nano
from .periods import parse_time, roll_on
from .types import PlanLimit
from .windows import Bucket, bucket_counts, bucket_expires_at, calendar_window, rolling_bucket, rolling_resets_at

Span = tuple[float, float]


class LimitCounter:
    __slots__ = ("buckets", "end", "held", "resets", "start", "sum", "used", "valid_until")

    def __init__(self) -> None:
        # Calendar and period limits: the window counted, [start, end), and what it counted.
        self.start = 0.0
        self.end = 0.0
        self.used: float = 0
        # Rolling limits: the buckets, oldest first.
        self.buckets: list[Bucket] = []
        # What the calls in flight hold.
        self.held: float = 0
        # Rolling limits: ``sum`` and ``resets`` hold until this time (the next bucket to age out), or a count.
        self.valid_until = -math.inf
        self.sum: float = 0
        self.resets: float | None = None


def unit_of(metric: str, amount: float) -> float:
    """An amount of a limit's metric in its integer unit: dollars to nano-dollars, counts as they are."""
    return to_nano(amount) if metric == "spend" else amount


def new_counter(limit: PlanLimit, now: float, time_zone: str, period: Span) -> LimitCounter:
    """A counter with nothing counted, in the window that holds ``now``."""
    c = LimitCounter()
    if limit.window != "rolling":
        c.start, c.end = _window_at(limit, now, time_zone, period, None)
    return c


def _window_at(limit: PlanLimit, t: float, time_zone: str, period: Span, last: Span | None) -> Span:
    """The window of a calendar or period limit that holds ``t``; a billing period that ended rolls on by its
    own length."""
    if limit.window == "period":
        if period[0] <= t < period[1]:
            return period
        start, end = last or period
        return roll_on(start, end, t)
    return calendar_window(limit.window, t, time_zone)  # type: ignore[arg-type]


def hard_mark_of(limit: PlanLimit, plan_hard: float) -> float:
    """The hard mark of a limit in its unit (money rounded to the nano-dollar, as gates compare)."""
    top = unit_of(limit.metric, limit.max)
    hard = plan_hard if limit.hard_gate_at is None else limit.hard_gate_at
    return _round_half_up(hard * top) if limit.metric == "spend" else hard * top


def advance(limit: PlanLimit, c: LimitCounter, now: float, time_zone: str, period: Span, hard_mark: float) -> None:
    """Brings the counter to ``now``: a calendar or period window that ended gives way to the one holding
    ``now`` with nothing counted (a window that has ended gates nothing); a rolling window drops the buckets
    that aged out and sums the rest (cached until the next one ages out)."""
    if limit.window != "rolling":
        if now < c.end:
            return
        c.start, c.end = _window_at(limit, now, time_zone, period, (c.start, c.end))
        c.used = 0
        return
    if now < c.valid_until:
        return
    d = limit.duration_minutes or 0
    buckets = c.buckets
    drop = 0
    while drop < len(buckets) and not bucket_counts(buckets[drop], d, now):
        drop += 1
    if drop:
        del buckets[:drop]
    c.sum = sum(b.used for b in buckets)
    c.resets = rolling_resets_at(buckets, d, hard_mark, now)
    c.valid_until = bucket_expires_at(buckets[0], d) if buckets else math.inf


def count_in(limit: PlanLimit, c: LimitCounter, at: float, amount: float, now: float) -> None:
    """A call at ``at`` adds ``amount`` (the limit's unit). A calendar window counts only a time it holds (a
    late call of a window that ended counts nowhere); a rolling window counts it in its bucket while that
    bucket still counts at ``now``."""
    if amount == 0:
        return
    if limit.window != "rolling":
        if c.start <= at < c.end:
            c.used += amount
        return
    d = limit.duration_minutes or 0
    start = rolling_bucket(d, at)[0]
    if not bucket_counts(Bucket(start, 0), d, now):
        return
    _add_bucket(c.buckets, start, int(amount), False)
    c.valid_until = -math.inf


def _add_bucket(buckets: list[Bucket], start: float, amount: int, larger: bool) -> None:
    """Adds to (or, with ``larger``, raises to) the bucket starting at ``start``, kept in order."""
    i = len(buckets) - 1
    while i >= 0 and buckets[i].start > start:
        i -= 1
    if i >= 0 and buckets[i].start == start:
        b = buckets[i]
        b.used = max(b.used, amount) if larger else b.used + amount
    else:
        buckets.insert(i + 1, Bucket(start, amount))


def merge_view(limit: PlanLimit, c: LimitCounter, v: dict[str, Any], now: float, time_zone: str, period: Span) -> None:
    """A session view's figure merged in (its ``limits`` entry; amounts in dollars for spend): per window
    (same start) or per bucket (same start) the larger of local and service values, since local holds calls
    not delivered yet and the service those of other processes. A later window than the local one is taken
    whole (the service saw it roll first); an earlier one is stale and left out."""
    if limit.window != "rolling":
        ws = v.get("window_start")
        if not isinstance(ws, str):
            return
        start = parse_time(ws)
        used = unit_of(limit.metric, float(v.get("used") or 0))
        if start == c.start:
            c.used = max(c.used, used)
        elif c.start < start <= now:
            w = _window_at(limit, start, time_zone, period, None)
            if w[1] <= now:
                return
            c.start, c.end = w
            c.used = used
        return
    d = limit.duration_minutes or 0
    buckets: Iterable[dict[str, Any]] = v.get("buckets") or ()
    for b in buckets:
        start = parse_time(b["start"])
        if not bucket_counts(Bucket(start, 0), d, now):
            continue
        _add_bucket(c.buckets, start, int(unit_of(limit.metric, float(b["used"]))), True)
    c.valid_until = -math.inf


def used_of(limit: PlanLimit, c: LimitCounter) -> float:
    """Counted in the limit's window as of the last advance() (the limit's unit), without what calls in
    flight hold."""
    return c.sum if limit.window == "rolling" else c.used


def resets_of(limit: PlanLimit, c: LimitCounter) -> float | None:
    """When the limit lets calls through again by itself, as of the last advance(); None: never (max 0) or
    nothing counted in a rolling window."""
    if limit.max <= 0:
        return None
    return c.resets if limit.window == "rolling" else c.end
