"""The library's state of a team (pure, time given): one team entry per team id shared by every member the client
serves, a member's call counted for the member, the team's sums and windows and the member's own team windows;
members' views merged into the team as a user's are; reservations held on the team; a member with no plan of its
own priced at the team's rates. The TypeScript client's test/teams.test.ts, case for case."""

from __future__ import annotations

from typing import Any

from meterline.dimensions import evaluate_nano
from meterline.money import to_nano
from meterline.periods import parse_time
from meterline.plan_rules import rules_of, team_rules_of
from meterline.reservation import Hold
from meterline.session_view import apply_view
from meterline.state import UserEntry, hold_team
from meterline.teams import Teams
from meterline.types import GuardResult, PlanConfig

NOW = parse_time("2026-11-28T20:00:00Z")
USER_PERIOD = {"start": "2026-11-01T00:00:00.000Z", "end": "2026-12-01T00:00:00.000Z"}
TEAM_PERIOD = {"start": "2026-11-15T00:00:00.000Z", "end": "2026-12-15T00:00:00.000Z"}
SEAT = {"name": "seat", "metric": "spend", "max": 0.4, "window": "period", "scope": "member"}
TEAM_PLAN = {"max_spend_per_period": 1, "limits": [SEAT], "cost_rates": {"gpt-4o": {"input": 2.5, "output": 10}}}


def team_view(period_cost: float = 0, **more: Any) -> dict[str, Any]:
    return {
        "team_id": "acme",
        "service_team_id": "t1",
        "plan": "team",
        "plan_id": "p-team",
        "plan_config": TEAM_PLAN,
        "current_usage": {"period_cost": period_cost, "period_tokens_by_model": {}, "period_cost_by_model": {}},
        "billing_period": TEAM_PERIOD,
        **more,
    }


def view(user_id: str, own: dict[str, Any] | None, team: dict[str, Any] | None, limits: list[Any] | None = None):
    return {
        "user_id": user_id,
        "service_user_id": f"s-{user_id}",
        "plan": "own" if own else "none",
        "plan_id": "p-own" if own else None,
        "sdk_enabled": own is not None or team is not None,
        "plan_config": own or {},
        "current_usage": {"period_cost": 0, "period_tokens_by_model": {}, "period_cost_by_model": {}},
        "billing_period": USER_PERIOD,
        "limits": limits or [],
        "team": team,
    }


def member(
    teams: Teams,
    user_id: str,
    own: dict[str, Any] | None = None,
    team: dict[str, Any] | None = None,
    limits: list[Any] | None = None,
) -> UserEntry:
    e = UserEntry(user_id, NOW)
    apply_view(e, view(user_id, own, team_view() if team is None else team, limits), NOW, teams)
    return e


def gate(e: UserEntry, now: float = NOW, estimate_cost: float = 0.0) -> GuardResult:
    """The check before a call, as admission makes it: the member's own dimensions and its team's in one evaluation."""
    e.advance_windows(now)
    s = e.sessions.at(None, now, e.timeout)
    t = e.team
    team = None
    if t is not None and t.config is not None:
        team = (
            team_rules_of(t.config),
            to_nano(t.period_cost + t.reserved_cost),
            0,
            t.period_end_t,
            e.advance_team(now),
        )
    own = e.config or PlanConfig()
    return evaluate_nano(rules_of(own), to_nano(e.period_cost + e.reserved_cost), to_nano(s.cost), None, 0,
                         to_nano(estimate_cost), 0, e.period_end_t, None, e.counters, team)  # fmt: skip


def call(e: UserEntry, cost: float, at: float = NOW) -> None:
    """A call counted as the client counts one (recording.py: the period, the windows, the team)."""
    e.period_cost += cost
    e.count_windows(None, 0, cost, at, at)
    e.count_team(None, 0, cost, at, at)


def test_members_share_one_team_entry_and_the_third_member_is_blocked_on_the_team_cap() -> None:
    teams = Teams()
    a, b, c = (member(teams, uid) for uid in ("a", "b", "c"))
    assert a.team is b.team and len(teams.entries) == 1
    call(a, 0.35)
    call(b, 0.35)
    call(a, 0.3)
    assert a.team is not None and a.team.period_cost == 1
    r = gate(c)
    assert (r.status, r.gate_reason, r.resets_at) == ("hard_gate", "team:total_spend", TEAM_PERIOD["end"])
    assert r.message == "Team spend limit reached: $1.0000 of $1.00 spent (100%)"
    state = c.snapshot(NOW)
    assert state.team is not None and state.team.period_cost == 1


def test_a_member_scope_cap_blocks_one_member_while_the_others_go_on() -> None:
    teams = Teams()
    a, b = member(teams, "a"), member(teams, "b")
    call(a, 0.4)
    call(b, 0.1)
    r = gate(a)
    assert (r.status, r.gate_reason) == ("hard_gate", "team:limit:seat")
    assert r.message == 'Member limit "seat" of the team reached: $0.4000 of $0.40 spent this period (100%)'
    assert gate(b).status == "ok"


def test_a_members_own_plan_cap_still_applies() -> None:
    teams = Teams()
    a = member(teams, "a", {"max_spend_per_period": 0.2})
    call(a, 0.2)
    r = gate(a)
    assert (r.status, r.gate_reason, r.resets_at) == ("hard_gate", "total_spend", USER_PERIOD["end"])


def test_a_member_with_no_plan_of_its_own_is_priced_at_the_team_rates_without_caps() -> None:
    teams = Teams()
    a = member(teams, "a")
    assert a.config is not None and set(a.config.cost_rates) == {"gpt-4o"}
    assert a.config.max_spend_per_period is None and a.config.limits == ()
    assert a.naming is not None and a.naming.max_spend_per_period == 1


def test_views_merge_larger_in_a_period_the_services_on_a_new_one_an_older_ignored() -> None:
    teams = Teams()
    a = member(teams, "a", team=team_view(0.3))
    team = a.team
    assert team is not None
    call(a, 0.2)
    assert team.period_cost == 0.5
    member(teams, "b", team=team_view(0.4))
    assert team.period_cost == 0.5
    member(teams, "c", team=team_view(0.7))
    assert team.period_cost == 0.7
    nxt = {"start": "2026-12-15T00:00:00.000Z", "end": "2027-01-15T00:00:00.000Z"}
    member(teams, "d", team=team_view(0.05, billing_period=nxt))
    assert (team.period_cost, team.period_start) == (0.05, nxt["start"])
    member(teams, "e", team=team_view(0.9))
    assert (team.period_cost, team.period_start) == (0.05, nxt["start"])


def test_a_views_member_scope_figure_goes_to_the_member_a_team_scope_one_to_the_team() -> None:
    pool = {"name": "pool", "metric": "spend", "max": 0.6, "window": "period", "scope": "team"}
    tv = team_view(plan_config={"limits": [SEAT, pool]})
    start = TEAM_PERIOD["start"]
    seat_v = {"reason": "team:limit:seat", "name": "seat", "scope": "member", "used": 0.4, "window_start": start}
    pool_v = {"reason": "team:limit:pool", "name": "pool", "scope": "team", "used": 0.25, "window_start": start}
    teams = Teams()
    a = member(teams, "a", team=tv, limits=[seat_v, pool_v])
    b = member(teams, "b", team=tv, limits=[{**seat_v, "used": 0}, pool_v])
    assert a.member_counters[0].used == to_nano(0.4) and b.member_counters[0].used == 0
    assert a.team is not None and a.team.counters[1].used == to_nano(0.25)
    assert gate(a).gate_reason == "team:limit:seat"
    assert gate(b).status == "ok"
    call(b, 0.35)
    assert gate(b).gate_reason == "team:limit:pool"
    assert b.member_counters[0].used == to_nano(0.35)


def test_a_reservation_holds_on_the_team_and_is_given_back() -> None:
    teams = Teams()
    a, b = member(teams, "a"), member(teams, "b")
    call(a, 0.7)
    a.advance_team(NOW)
    assert a.team is not None and a.team.config is not None
    held = Hold(a, a.sessions.at(None, NOW, a.timeout), None, 0.3, 0, None)
    held.team, held.team_limits, held.team_counters = a.team, a.team.config.limits, a.team_mix
    hold_team(held, 1)
    assert a.team.reserved_cost == 0.3 and a.member_counters[0].held == to_nano(0.3)
    r = gate(b)
    assert (r.status, r.gate_reason) == ("hard_gate", "team:total_spend")
    hold_team(held, -1)
    assert a.team.reserved_cost == 0 and a.member_counters[0].held == 0
    assert gate(b).status == "ok"
    assert gate(b, estimate_cost=0.31).status == "hard_gate"
    assert gate(b, estimate_cost=0.3).status == "soft_gate"


def test_a_team_plan_changed_by_another_members_view_rekeys_this_members_counters() -> None:
    teams = Teams()
    a = member(teams, "a")
    call(a, 0.3)
    renamed = {**SEAT, "name": "per_seat", "max": 0.5}
    member(teams, "b", team=team_view(plan_config={"max_spend_per_period": 1, "limits": [renamed]}))
    assert gate(a).status == "ok"
    assert a.member_counters[0].used == to_nano(0.3)
    call(a, 0.2)
    assert gate(a).gate_reason == "team:limit:per_seat"


def test_leaving_the_team_drops_its_dimensions_and_the_entry_once_no_member_names_it() -> None:
    teams = Teams()
    a = member(teams, "a")
    call(a, 0.4)
    assert gate(a).gate_reason == "team:limit:seat"
    apply_view(a, view("a", None, None), NOW, teams)
    assert a.team is None and a.config is None
    assert gate(a).status == "ok"
    teams.sweep([a])
    assert teams.entries == {}
