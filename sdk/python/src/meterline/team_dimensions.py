"""A member of a team checked against its team plan apart from its own plan (BUDGETS.md section 4): the team
plan's result (evaluate_nano of team_rules_of, over the team's sums) and the member's own, and combine the
deciding one of both. The guard decides the same in one evaluation of both (dimensions.evaluate_nano's
``team``). Cases: rules/cases.json, section ``teams``."""

from __future__ import annotations

from .dimensions import _HARD, _OK, _SOFT
from .periods import parse_time
from .plan_rules import _INF, OK_RESULT
from .types import GuardResult

_RANK = {"ok": _OK, "soft_gate": _SOFT, "hard_gate": _HARD}


def combine(own: GuardResult, team: GuardResult) -> GuardResult:
    """The deciding one of a member's own result and its team's, as if both lists were one (the member's
    first): the higher status; two hard gates, the later ``resets_at`` (None = never = latest), then the higher
    usage; else the higher usage; equals keep the member's."""
    if team is OK_RESULT:
        return own
    a, b = _RANK[own.status], _RANK[team.status]
    if a != b:
        return team if b > a else own
    if a == _HARD and own.resets_at != team.resets_at:
        ra = _INF if own.resets_at is None else parse_time(own.resets_at)
        rb = _INF if team.resets_at is None else parse_time(team.resets_at)
        if ra != rb:
            return team if rb > ra else own
    return team if team.usage_pct > own.usage_pct else own
