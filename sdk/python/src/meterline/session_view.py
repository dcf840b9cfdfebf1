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
- A team (``team``, BUDGETS.md section 4): the team's block is merged into the team's entry shared by its members
  (teams.py); the view's scope-member team limits into the member's own counters of them. A member without a plan of
  its own is priced at the team plan's rates, with no caps of its own.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from .counters import merge_view
from .credits import read_credits, with_cap
from .periods import iso, parse_time, roll_on
from .state import UserEntry
from .teams import Teams, keep_counters, member_scoped, merge_usage, team_limits
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


def _priced_by(team_raw: dict[str, Any]) -> PlanConfig:
    """A team plan's prices without its caps: what a member with no plan of its own is priced at."""
    caps: dict[str, Any] = {
        "max_spend_per_period": None,
        "max_spend_per_session": None,
        "model_limits": {},
        "limits": [],
    }
    return _intern({**team_raw, **caps, "credits_enabled": False, "credits_low_at": None})


def _held_tokens(e: UserEntry) -> dict[str, int]:
    """Tokens of the events waiting for the plan, by the model name they were counted under."""
    sums: dict[str, int] = {}
    for event, _session in e.unpriced:
        if event.model is not None:
            sums[event.model] = sums.get(event.model, 0) + event.total_tokens
    return sums


def _add_tokens(by_model: dict[str, int], held: dict[str, int], sign: int) -> None:
    for model, n in held.items():
        total = by_model.get(model, 0) + sign * n
        if total > 0:
            by_model[model] = total
        else:
            by_model.pop(model, None)


def apply_view(e: UserEntry, view: dict[str, Any], now: float, teams: Teams | None = None) -> Merge:
    u = view.get("current_usage") or {}
    period = view["billing_period"]
    # The service still names a period this client rolled past (SPEC: a period that ended with no new dates
    # from the service is cleared locally): the local period and what it counted stand.
    behind = e.loaded and parse_time(period["end"]) <= parse_time(e.period_start)
    merge: Merge
    if not e.loaded:
        merge = "first"
    elif e.service_user_id is not None and e.service_user_id != view["service_user_id"]:
        merge = "reset"
    elif not behind and (e.period_start != period["start"] or e.period_end != period["end"]):
        merge = "fresh_period"
    else:
        merge = "same_period"
    if merge == "reset":
        e.sessions.clear(now)
    # "first": anything recorded before the first answer belongs to the period the service reports. It is
    # held back (priced, then sent, once this view is in), so the service's figures hold none of its tokens.
    held = _held_tokens(e) if merge == "first" else {}
    _add_tokens(e.tokens_by_model, held, -1)
    if not behind:
        merge_usage(e, u, merge in ("same_period", "first"))
    _add_tokens(e.tokens_by_model, held, 1)
    raw = view.get("plan_config") or {}
    e.service_user_id = view["service_user_id"]
    e.plan = view.get("plan", "none")
    plan_id = view.get("plan_id")
    e.plan_id = plan_id if isinstance(plan_id, str) else None
    before = e.config
    tv = view.get("team") if isinstance(view.get("team"), dict) else None
    team_raw = (tv.get("plan_config") or {}) if tv is not None else {}
    # A member with no plan of its own (in a subscribed team): priced at the team plan's rates, no caps of its own.
    team_priced = bool(view.get("sdk_enabled")) and tv is not None and e.plan_id is None
    plan = (_priced_by(team_raw) if team_priced else _intern(raw)) if view.get("sdk_enabled") else None
    e.naming = _intern(team_raw) if team_priced else plan
    e.credits = read_credits(plan, view, e.period_cost, None if merge == "reset" else e.credits, now)
    e.config = plan if e.credits is None or plan is None else with_cap(plan, e.credits.cap, e.credits.allowance)
    e.timeout = float(raw.get("session_timeout_minutes") or 30.0) * 60.0
    if not behind:
        e.period_start = period["start"]
        e.period_end = period["end"]
        e.period_end_t = parse_time(period["end"])
    e.models.clear()
    e.loaded = True
    e.unknown = False
    e.fail_closed = False
    _apply_windows(e, before, view, now, merge == "reset")
    _apply_team(e, tv, view, now, teams, merge == "reset")
    return merge


def _apply_team(
    e: UserEntry, tv: dict[str, Any] | None, view: dict[str, Any], now: float, teams: Teams | None, reset: bool
) -> None:
    """The view's team: its block merged into the team's shared entry (unless older than what the entry holds),
    then the member's own counters of scope-member limits re-keyed to the team plan and the view's figures of them
    merged in. Another team than before (the user moved): the member's counters start again."""
    if tv is None or teams is None:
        e.team = None
        e.member_counters = []
        e.member_plan = None
        return
    team = teams.of(str(tv.get("team_id")))
    current = team.apply(tv, _intern(tv.get("plan_config") or {}), view.get("limits"), now)
    if team is not e.team or reset:
        e.member_counters = []
        e.member_plan = None
    e.team = team
    e.sync_team(now)
    plan = team.config
    if not current or plan is None:
        return
    period = team.period()
    for i, v in team_limits(plan, view.get("limits")):
        lim = plan.limits[i]
        if member_scoped(lim):
            merge_view(lim, e.member_counters[i], v, now, plan.time_zone, period)
    e.team_due = -math.inf


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
        e.counters = keep_counters(None if reset else before, e.counters, plan, now, period)
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


def roll_locally(e: UserEntry, now: float) -> None:
    """The period ended and the service gave no new one: clear counters, assume the next period is as long."""
    new_start, end = roll_on(parse_time(e.period_start), e.period_end_t, now)
    if e.credits is not None and e.config is not None:
        e.credits.rolled(e.period_cost)
        e.config = with_cap(e.config, e.credits.cap, e.credits.allowance)
    e.period_start = iso(new_start)
    e.period_end = iso(end)
    e.period_end_t = end
    e.period_cost = 0.0
    e.tokens_by_model = {}
    e.cost_by_model = {}
