"""A plan's dimensions resolved once per plan for their evaluation (dimensions.py): ``Rules``, the caps and each
limit in the units the evaluation compares (nano-dollars for spend) with their soft and hard marks, and the
dimensions the quick pass reads for a call of one model; a team plan's (``team:`` reasons, no session cap) for a
member's check. rules_of and team_rules_of keep them per plan object."""

from __future__ import annotations

import math
from typing import Any

from .money import _round_half_up, to_nano
from .types import GuardResult, PlanConfig, PlanLimit

# Counts: a relative tolerance for marks that are not whole (0.8 x 1001). Money is compared in whole
# nano-dollars (money.py), exactly.
_EPSILON = 1e-9
_INF = math.inf
# Usage from here on (2**53) is divided as an integer, by _decide: a float would not hold it exactly.
_EXACT = 1 << 53
# Models whose dimensions are kept per plan.
MODELS_KEPT = 256

OK_RESULT = GuardResult("ok", None, 0.0, 0.0, 0.0, None)


def _marks(metric: str, top: float, soft: float, hard: float) -> tuple[float, float]:
    if metric == "spend":
        return _round_half_up(soft * top), _round_half_up(hard * top)
    return soft * top, hard * top


# What the quick pass compares one dimension with: its max, the least of its soft and hard marks less the
# tolerance (from there on _decide may gate, and a usage from _EXACT on is divided exactly there), and whether it
# is money.
_Quick = tuple[float, float, bool]
# Where the quick pass reads a dimension's usage and estimate: the period's spend, the session's, the model's
# tokens; a plan limit's counter (its index, 0 and up) with the estimate of its metric (_SPEND...).
_PERIOD, _SESSION, _MODEL = -1, -2, -3
_SPEND, _TOKENS, _REQUESTS = 0, 1, 2
# Sources of a team's figures in a member's quick pass (Rules.joined_dims).
_TEAM_PERIOD, _TEAM_MODEL, _TEAM_COUNTER = -4, -5, -10
# Dimensions of one model in the quick pass: (source, metric, rolling, _Quick), in evaluation order.
_QuickDims = tuple[tuple[int, int, bool, "_Quick"], ...]


def _quick(metric: str, top: float, soft: float, hard: float) -> _Quick:
    money = metric == "spend"
    if top <= 0:
        # Nothing allowed: always at the hard gate, never decided by the quick pass.
        return top, -_INF, money
    tol = 0 if money else top * _EPSILON
    # A float divides faster than a large integer (above 2**53: a cap of $9M in nano-dollars), and gives the
    # same quotient when it holds the integer exactly.
    if float(top) == top:
        top = float(top)
    return top, min(soft - tol, hard - tol, _EXACT), money


class Rules:
    """What evaluation reads of a plan, resolved once per plan: the period and session caps in nano-dollars with
    their marks, each limit's reason, max in its unit and marks, the same as the quick pass reads them, and the
    estimates of calls by model and size (reservation_of depends on nothing else with pre_call_estimate). A team
    plan's (``team``): reasons prefixed ``team:``, no session cap (sessions are a user's), each limit's scope."""

    __slots__ = ("dims", "estimates", "joined", "last_ok", "period", "plan", "prefix", "rows", "session")

    def __init__(self, plan: PlanConfig, team: bool = False) -> None:
        self.plan = plan
        self.prefix = "team:" if team else ""
        soft, hard = plan.soft_gate_at, plan.hard_gate_at
        self.period: tuple[float, float, float] | None = None
        self.session: tuple[float, float, float] | None = None
        if plan.max_spend_per_period is not None:
            cap = to_nano(plan.max_spend_per_period)
            self.period = (cap, *_marks("spend", cap, soft, hard))
        if plan.max_spend_per_session is not None and not team:
            cap = to_nano(plan.max_spend_per_session)
            self.session = (cap, *_marks("spend", cap, soft, hard))
        self.rows: list[tuple[PlanLimit, str, float, float, float, str | None]] = []
        for lim in plan.limits:
            top = to_nano(lim.max) if lim.metric == "spend" else lim.max
            soft = plan.soft_gate_at if lim.soft_gate_at is None else lim.soft_gate_at
            hard = plan.hard_gate_at if lim.hard_gate_at is None else lim.hard_gate_at
            scope = ("member" if lim.scope == "member" else "team") if team else None
            self.rows.append((lim, f"{self.prefix}limit:{lim.name}", top, *_marks(lim.metric, top, soft, hard), scope))
        # The quick pass's dimensions by normalized model (filled as models are met).
        self.dims: dict[str | None, _QuickDims] = {}
        # The same followed by a team plan's (a member's check: joined_dims), by (id of the team's rules, model).
        self.joined: dict[tuple[int, str | None], tuple[Rules, _QuickDims]] = {}
        self.estimates: dict[Any, Any] = {}
        # The last result of the quick pass: given again while equal (results are immutable), not rebuilt.
        self.last_ok = OK_RESULT

    def dims_of(self, model: str | None) -> _QuickDims:
        """The dimensions a call of ``model`` is evaluated on, in _decide's order, as the quick pass reads them."""
        dims = self.dims.get(model)
        if dims is not None:
            return dims
        plan = self.plan
        out: list[tuple[int, int, bool, _Quick]] = []
        if self.period is not None:
            out.append((_PERIOD, _SPEND, False, _quick("spend", *self.period)))
        if self.session is not None:
            out.append((_SESSION, _SPEND, False, _quick("spend", *self.session)))
        cap = None if model is None else plan.model_limits.get(model)
        if cap is not None:
            marks = plan.soft_gate_at * cap, plan.hard_gate_at * cap
            out.append((_MODEL, _TOKENS, False, _quick("tokens", cap, *marks)))
        for i, (lim, _, top, soft, hard, _scope) in enumerate(self.rows):
            if lim.model is not None and lim.model != model:
                continue
            metric = _SPEND if lim.metric == "spend" else _TOKENS if lim.metric == "tokens" else _REQUESTS
            out.append((i, metric, lim.window == "rolling", _quick(lim.metric, top, soft, hard)))
        if len(self.dims) >= MODELS_KEPT:
            self.dims.clear()
        dims = self.dims[model] = tuple(out)
        return dims

    def joined_dims(self, team: Rules, model: str | None) -> _QuickDims:
        """dims_of(model) followed by the team plan's (``team``), their sources moved to the team's figures:
        _TEAM_PERIOD, _TEAM_MODEL, and team counter i as _TEAM_COUNTER - i."""
        key = (id(team), model)
        got = self.joined.get(key)
        if got is not None and got[0] is team:
            return got[1]
        moved = tuple(
            (_TEAM_COUNTER - src if src >= 0 else _TEAM_PERIOD if src == _PERIOD else _TEAM_MODEL, kind, rolling, q)
            for src, kind, rolling, q in team.dims_of(model)
        )
        if len(self.joined) >= MODELS_KEPT:
            self.joined.clear()
        dims = self.dims_of(model) + moved
        self.joined[key] = (team, dims)
        return dims


_rules: dict[int, Rules] = {}
_team_rules: dict[int, Rules] = {}


def rules_of(plan: PlanConfig) -> Rules:
    """The plan's rules, resolved once per plan object (plans are replaced whole on a change)."""
    r = _rules.get(id(plan))
    if r is None or r.plan is not plan:
        if len(_rules) >= 1000:
            _rules.clear()
        r = _rules[id(plan)] = Rules(plan)
    return r


def team_rules_of(plan: PlanConfig) -> Rules:
    """A team plan's rules (``team:`` reasons, no session cap), resolved once per plan object."""
    r = _team_rules.get(id(plan))
    if r is None or r.plan is not plan:
        if len(_team_rules) >= 1000:
            _team_rules.clear()
        r = _team_rules[id(plan)] = Rules(plan, team=True)
    return r
