"""Merging a session view into local state, and billing-period rollover (pure, over a UserEntry).

- Another service_user_id than before (user deleted and re-created): everything local resets.
- Other period dates than local: local counters are zeroed and the service's values taken.
- Same dates (a refresh, or a plan change that keeps the period): each counter keeps the larger
  of local and service values: local holds undelivered events, the service other processes' spend.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from .periods import roll_on
from .state import UserEntry, iso, parse_time
from .types import PlanConfig

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
    e.config = _intern(raw) if view.get("sdk_enabled") else None
    e.timeout = float(raw.get("session_timeout_minutes") or 30.0) * 60.0
    e.period_start = period["start"]
    e.period_end = period["end"]
    e.period_end_t = parse_time(period["end"])
    e.models.clear()
    e.loaded = True
    e.unknown = False
    e.fail_closed = False
    return merge


def roll_locally(e: UserEntry, now: float) -> None:
    """The period ended and the service gave no new one: clear counters, assume the next period is as long."""
    new_start, end = roll_on(parse_time(e.period_start), e.period_end_t, now)
    e.period_start = iso(new_start)
    e.period_end = iso(end)
    e.period_end_t = end
    e.period_cost = 0.0
    e.tokens_by_model = {}
    e.cost_by_model = {}
