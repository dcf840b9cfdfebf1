"""The table's windows and dimensions sections (rules/cases.json): calendar and rolling windows, the keys of
dimensions, every dimension of a plan with limits evaluated together; and the session view's windows as a
client keeps them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from meterline.money import to_nano
from meterline.periods import iso, parse_time
from meterline.session_view import apply_view
from meterline.state import UserEntry
from meterline.types import PlanConfig
from meterline.windows import (
    CALENDAR_WINDOWS,
    Bucket,
    calendar_window,
    dimension_key,
    is_time_zone,
    rolling_resets_at,
    rolling_used,
)

from .rules_table import TABLE, evaluate_own, matches, view

WINDOWS = TABLE["windows"]


@pytest.mark.parametrize("case", WINDOWS["calendar"], ids=[c["name"] for c in WINDOWS["calendar"]])
def test_calendar_windows_table(case: dict[str, Any]) -> None:
    start, end = calendar_window(case["window"], parse_time(case["at"]), case["time_zone"])
    assert {"start": iso(start), "end": iso(end)} == case["expect"], case["name"]


@pytest.mark.parametrize("case", WINDOWS["rolling"], ids=[c["name"] for c in WINDOWS["rolling"]])
def test_rolling_windows_table(case: dict[str, Any]) -> None:
    buckets = [Bucket(parse_time(b["start"]), b["used"]) for b in case["buckets"]]
    now = parse_time(case["now"])
    resets = rolling_resets_at(buckets, case["duration_minutes"], case["hard_mark"], now)
    used = rolling_used(buckets, case["duration_minutes"], now)
    got = {"used": used, "resets_at": None if resets is None else iso(resets)}
    assert got == case["expect"], case["name"]


def test_dimension_keys_table() -> None:
    for c in WINDOWS["dimension_key"]:
        lim = c["limit"]
        assert dimension_key(lim["metric"], lim["window"], lim.get("duration_minutes"), lim.get("model")) == c["expect"]


ZONES = ["UTC", "America/New_York", "Europe/Berlin", "America/Santiago", "Asia/Kolkata", "Australia/Lord_Howe"]


@pytest.mark.parametrize("tz", ZONES)
def test_calendar_windows_tile_time(tz: str) -> None:
    """Consecutive windows: each starts where the one before ends, across daylight-saving changes."""
    for kind in CALENDAR_WINDOWS:
        t = parse_time("2026-01-01T00:00:00Z")
        stop = parse_time("2026-01-03T00:00:00Z" if kind in ("minute", "hour") else "2027-01-01T00:00:00Z")
        start, end = calendar_window(kind, t, tz)
        while end < stop:
            assert start <= t < end, f"{tz} {kind} {iso(t)}"
            nxt = calendar_window(kind, end, tz)
            assert nxt[0] == end, f"{tz} {kind}: the window after {iso(start)}"
            assert calendar_window(kind, end - 0.001, tz)[0] == start
            t = end
            start, end = nxt
    assert is_time_zone("Europe/Paris") and is_time_zone("UTC")
    assert not is_time_zone("Mars/Olympus") and not is_time_zone("")


DIMENSIONS = TABLE["dimensions"]["cases"]


@pytest.mark.parametrize("case", DIMENSIONS, ids=[c["name"] for c in DIMENSIONS])
def test_dimensions_table(case: dict[str, Any]) -> None:
    got = evaluate_own(case, PlanConfig.parse(case["plan"]), parse_time(case["now"]))
    matches(dataclasses.asdict(got), case["expect"], case["name"])


def test_dimensions_table_is_whole() -> None:
    assert len(DIMENSIONS) >= 25


def test_session_view_windows_merge_per_window_and_bucket_and_keep_counters_by_what_they_count() -> None:
    now = parse_time("2026-11-28T20:00:30Z")
    rpm = {"name": "rpm", "metric": "requests", "max": 5, "window": "minute"}
    roll = {"name": "roll", "metric": "spend", "max": 1, "window": "rolling", "duration_minutes": 60}
    cfg = {"max_spend_per_period": 10, "limits": [rpm, roll]}
    minute = "2026-11-28T20:00:00.000Z"
    limits: list[dict[str, Any]] = [
        {"reason": "limit:rpm", "name": "rpm", "window_start": minute, "used": 2},
        {"reason": "limit:roll", "name": "roll", "buckets": [{"start": "2026-11-28T19:30:00.000Z", "used": 0.25}]},
    ]
    e = UserEntry("u", now)
    apply_view(e, view({"plan_config": cfg, "limits": limits}), now)
    e.count_windows(None, 10, 0.5, now, now)
    e.advance_windows(now)
    assert (e.counters[0].used, e.counters[1].sum) == (3, to_nano(0.75))
    # Another process counted more in the minute, less in the bucket: each keeps the larger figure.
    limits[0]["used"] = 4
    limits[1]["buckets"] = [{"start": "2026-11-28T19:30:00.000Z", "used": 0.1}]
    apply_view(e, view({"plan_config": cfg, "limits": limits}), now)
    e.advance_windows(now)
    assert (e.counters[0].used, e.counters[1].sum) == (4, to_nano(0.75))
    # A renamed limit keeps its counter; another window starts empty.
    renamed = {**cfg, "limits": [{**rpm, "name": "per_minute"}, {**roll, "duration_minutes": 30}]}
    apply_view(e, view({"plan_config": renamed}), now)
    e.advance_windows(now)
    assert (e.counters[0].used, e.counters[1].sum) == (4, 0)
    # The window rolls at its end without a view.
    e.advance_windows(parse_time("2026-11-28T20:01:00Z"))
    assert e.counters[0].used == 0
