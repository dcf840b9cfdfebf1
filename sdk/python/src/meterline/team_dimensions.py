"""A member of a team checked against its team plan apart from its own plan (BUDGETS.md section 4):
evaluate_team gives the team plan's result, combine the deciding one of it and the member's own. The guard
decides the same in one evaluation of both (dimensions.evaluate_nano's ``team``). Cases: rules/cases.json,
section ``teams``."""

from __future__ import annotations

from collections.abc import Sequence

from .counters import LimitCounter
from .dimensions import _HARD, _OK, _SOFT, evaluate_nano
from .money import to_nano
from .periods import parse_time
from .plan_rules import _INF, OK_RESULT, team_rules_of
from .types import GuardResult, PlanConfig

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


def evaluate_team(
    plan: PlanConfig,
    period_cost: float,
    model: str | None,
    model_tokens: float,
    estimate_cost: float = 0.0,
    estimate_tokens: float = 0.0,
    period_end: float | None = None,
    counters: Sequence[LimitCounter] = (),
) -> GuardResult:
    """A member's call against its team plan (BUDGETS.md section 4): the plan's period and model caps over the
    team's sums, each limit over ``counters[i]`` (the team's counter for scope ``team``, the member's for
    ``member``), reasons prefixed ``team:``; the team plan's session cap is not applied. combine() with the
    member's own result gives the deciding one of both."""
    est_nano = to_nano(estimate_cost) if estimate_cost else 0
    return evaluate_nano(
        team_rules_of(plan), to_nano(period_cost), 0, model, model_tokens, est_nano, estimate_tokens, period_end,
        None, counters,
    )  # fmt: skip
