"""Merging a session view into local state, and billing-period rollover (pure, over a UserEntry).

- Another service_user_id than before (user deleted and re-created): everything local resets.
- Other period dates than local: local counters are zeroed and the service's values taken.
- Same dates (a refresh, or a plan change that keeps the period): each counter keeps the larger
  of local and service values: local holds undelivered events, the service other processes' spend.
- Windows (the plan's ``limits``): one counter per limit, kept across views by what it counts (a renamed
  limit keeps its usage); each takes, per window (same start) or per rolling bucket (same start), the larger
  of local and service values.
- Credits (credits.py): the view's period cap with the balance becomes the user's ``max_spend_per_period``, which
  every gate and lease reads; the local balance is what it leaves after the merged spend, so the lower of local and
  service balances wins.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from .counters import LimitCounter, merge_view, new_counter
from .credits import read_credits, with_cap
from .periods import iso, parse_time, roll_on
from .state import UserEntry
from .types import PlanConfig, PlanLimit
from .windows import dimension_key

Merge = Literal["first", "reset", "fresh_period", "same_period"]

_configs: dict[str, PlanConfig] = {}
_MAX_CONFIGS = 1000


def _intern(raw: dict[str, Any]) -> PlanConfig:
    """Users on one plan share one config object (bounded; cleared when full)."""
    key = json.dumps(raw, sort_keys=True)
    c = _configs.get(key)
    if c is None:
        if len(_configs) >= _MAX_CONFIGS:
            _configs.clear()
        c = PlanConfig.parse(raw)
        _configs[key] = c
    return c


def _max_of(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = max(out.get(k, 0), v)
    return out


def apply_view(e: UserEntry, view: dict[str, Any], now: float) -> Merge:
    u = view.get("current_usage") or {}
    period = view["billing_period"]
    merge: Merge
    if not e.loaded:
        merge = "first"
    elif e.service_user_id is not None and e.service_user_id != view["service_user_id"]:
        merge = "reset"
    elif e.period_start != period["start"] or e.period_end != period["end"]:
        merge = "fresh_period"
    else:
        merge = "same_period"
    if merge == "reset":
        e.sessions.clear(now)
    tokens = {k: int(v) for k, v in (u.get("period_tokens_by_model") or {}).items()}
    costs = {k: float(v) for k, v in (u.get("period_cost_by_model") or {}).items()}
    period_cost = float(u.get("period_cost") or 0)
    if merge in ("same_period", "first"):
        # "first": anything recorded before the first answer belongs to the period the service reports.
        e.period_cost = max(e.period_cost, period_cost)
        e.tokens_by_model = _max_of(e.tokens_by_model, tokens)
        e.cost_by_model = _max_of(e.cost_by_model, costs)
    else:
        e.period_cost = period_cost
        e.tokens_by_model = tokens
        e.cost_by_model = costs
    raw = view.get("plan_config") or {}
    e.service_user_id = view["service_user_id"]
    e.plan = view.get("plan", "none")
    plan_id = view.get("plan_id")
    e.plan_id = plan_id if isinstance(plan_id, str) else None
    before = e.config
    plan = _intern(raw) if view.get("sdk_enabled") else None
    e.credits = read_credits(plan, view, e.period_cost, None if merge == "reset" else e.credits, now)
    e.config = plan if e.credits is None or plan is None else with_cap(plan, e.credits.cap)
    e.timeout = float(raw.get("session_timeout_minutes") or 30.0) * 60.0
    e.period_start = period["start"]
    e.period_end = period["end"]
    e.period_end_t = parse_time(period["end"])
    e.models.clear()
    e.loaded = True
    e.unknown = False
    e.fail_closed = False
    _apply_windows(e, before, view, now, merge == "reset")
    return merge


def _apply_windows(e: UserEntry, before: PlanConfig | None, view: dict[str, Any], now: float, reset: bool) -> None:
    """The plan's windows after a view: counters of limits that count the same thing as before (same metric,
    window, duration and model, same time zone) are kept, others start empty; then the service's figure of
    each limit is merged in (counters.merge_view)."""
    plan = e.config
    e.expired()
    if plan is None or not plan.limits:
        e.counters = []
        return
    period = e.period()
    if reset or before is not plan:
        kept: dict[str, LimitCounter] = {}
        if not reset and before is not None and before.time_zone == plan.time_zone:
            for old, counter in zip(before.limits, e.counters, strict=False):
                kept[_key(old)] = counter
        counters = []
        for lim in plan.limits:
            # Two equal limits: the second starts from the service's figure.
            c = kept.pop(_key(lim), None)
            counters.append(c if c is not None else new_counter(lim, now, plan.time_zone, period))
        e.counters = counters
    seen = view.get("limits")
    if not isinstance(seen, list):
        return
    names = {lim.name: i for i, lim in enumerate(plan.limits)}
    for v in seen:
        if not isinstance(v, dict) or not str(v.get("reason", "")).startswith("limit:"):
            continue
        i = names.get(str(v.get("name")))
        if i is not None:
            merge_view(plan.limits[i], e.counters[i], v, now, plan.time_zone, period)


def _key(lim: PlanLimit) -> str:
    return dimension_key(lim.metric, lim.window, lim.duration_minutes, lim.model)


def roll_locally(e: UserEntry, now: float) -> None:
    """The period ended and the service gave no new one: clear counters, assume the next period is as long."""
    new_start, end = roll_on(parse_time(e.period_start), e.period_end_t, now)
    if e.credits is not None and e.config is not None:
        e.credits.rolled(e.period_cost)
        e.config = with_cap(e.config, e.credits.cap)
    e.period_start = iso(new_start)
    e.period_end = iso(end)
    e.period_end_t = end
    e.period_cost = 0.0
    e.tokens_by_model = {}
    e.cost_by_model = {}
