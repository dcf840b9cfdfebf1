"""Evaluation of a list of dimensions (BUDGETS.md section 1), as rules/dimensions.ts defines it: every
dimension a call is counted against (SPEC's three and a plan's ``limits``) against its soft and hard marks.
The call is blocked when any dimension is at its hard gate; several at once: the one that allows a call again
last names the block (latest ``resets_at``, None = never = latest; ties: the higher usage, then list order).
No hard gate: the soft one with the highest usage. A plan without ``limits`` gives what gates always gave.
A member of a team is checked against the team plan's dimensions too (``team:`` reasons), in the same evaluation
(evaluate_nano's ``team``; apart: team_dimensions.py). The plan's dimensions are resolved once per plan by
plan_rules.py. Cases: rules/cases.json, sections ``gates``, ``dimensions`` and ``teams``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .counters import LimitCounter
from .gate_messages import describe
from .money import RATIO_SCALE, to_dollars, to_nano
from .periods import iso
from .plan_rules import (
    _EPSILON,
    _INF,
    _MODEL,
    _PERIOD,
    _SESSION,
    _SPEND,
    _TEAM_COUNTER,
    _TEAM_PERIOD,
    _TOKENS,
    OK_RESULT,
    Rules,
    _marks,
    _Quick,
    rules_of,
)
from .types import GuardResult, PlanConfig

_OK, _SOFT, _HARD = 0, 1, 2
_STATUS = ("ok", "soft_gate", "hard_gate")
_SCALE = RATIO_SCALE
_floor = math.floor


@dataclass(slots=True)
class Dimension:
    """One dimension before a call. Amounts in dollars for spend, else tokens or requests."""

    reason: str
    """``total_spend``, ``session_spend``, ``model_limit:<model>`` or ``limit:<name>``."""
    metric: str
    window: str
    """The window counted (``session`` for the session cap): read by the message only."""
    max: float
    used: float
    """Counted so far in the window plus what calls in flight hold."""
    estimate: float
    """What this call adds as a projection: its estimate with pre_call_estimate (0 without), for ``requests``
    always 1 (the call itself)."""
    soft_gate_at: float
    hard_gate_at: float
    resets_at: float | None
    """When the dimension lets a call through again by itself (epoch seconds); None: never or unknown."""
    duration_minutes: int | None = None


# One row per dimension: (reason, metric, window, duration, used, estimate, max, soft mark, hard mark,
# resets_at, scope), amounts in the metric's unit (nano-dollars for spend). Marks are resolved once per plan.
# scope: a team plan's limit's (``team`` or ``member``, for the message), else None.
_Row = tuple[str, str, str, "int | None", float, float, float, float, float, "float | None", "str | None"]


def evaluate_dimensions(dims: Sequence[Dimension]) -> GuardResult:
    """Every dimension of ``dims`` (in order); the deciding one named in the result."""
    rows: list[_Row] = []
    for d in dims:
        money = d.metric == "spend"
        top = to_nano(d.max) if money else d.max
        soft, hard = _marks(d.metric, top, d.soft_gate_at, d.hard_gate_at)
        used = to_nano(d.used) if money else d.used
        est = to_nano(d.estimate) if money else d.estimate
        rows.append((d.reason, d.metric, d.window, d.duration_minutes, used, est, top, soft, hard, d.resets_at, None))
    return _decide(rows)


# A member's team in the member's evaluation (evaluate_nano's ``team``): the team plan's rules (team_rules_of), the
# team's period spend in nano-dollars, its tokens of the call's model, its period's end, and one counter per team
# plan limit (the team's for scope team, the member's for scope member).
TeamFigures = tuple["Rules", int, float, "float | None", Sequence[LimitCounter]]


def evaluate_plan(
    plan: PlanConfig | None,
    period_cost: float,
    session_cost: float,
    model: str | None,
    model_tokens: float,
    estimate_cost: float = 0.0,
    estimate_tokens: float = 0.0,
    period_end: float | None = None,
    session_end: float | None = None,
    counters: Sequence[LimitCounter] = (),
) -> GuardResult:
    """Every dimension of a plan for one call: SPEC's caps then each entry of ``limits`` whose model is unset
    or the call's. A limit's usage is its counter (counted plus held by calls in flight, brought to now by
    counters.advance); its estimate is the call's cost (spend) or tokens (tokens) as given, and 1 for
    ``requests``: the call itself. Per-limit gates override the plan's. Reaching the hard mark blocks; with an
    estimate, so does a call whose estimate would take usage past it (one landing exactly on it runs)."""
    if plan is None:
        return OK_RESULT
    est_nano = to_nano(estimate_cost) if estimate_cost else 0
    return evaluate_nano(
        rules_of(plan), to_nano(period_cost), to_nano(session_cost), model, model_tokens, est_nano, estimate_tokens,
        period_end, session_end, counters,
    )  # fmt: skip


def evaluate_nano(
    rules: Rules,
    period_nano: int,
    session_nano: int,
    model: str | None,
    model_tokens: float,
    est_nano: int,
    estimate_tokens: float,
    period_end: float | None,
    session_end: float | None,
    counters: Sequence[LimitCounter],
    team: TeamFigures | None = None,
) -> GuardResult:
    """evaluate_plan of ``rules.plan`` with the money in whole nano-dollars (the guard's hot path); with ``team``,
    the member's team plan's dimensions in the same evaluation, after the member's own (as combine() of the two
    results would decide: team_dimensions.py)."""
    # The quick pass decides the usual call, every dimension below its soft mark, without building rows: the
    # one with the highest usage (the first of equals, as _decide picks) names the result. Anything else:
    # _decide.
    n = len(counters)
    w_pct = -1.0
    w_p = 0.0
    w_q: _Quick | None = None
    top_r = -1.0
    quick = True
    if team is None:
        dims = rules.dims_of(model)
        t_counters: Sequence[LimitCounter] = ()
        t_period = t_tokens = 0.0
    else:
        dims = rules.joined_dims(team[0], model)
        t_period, t_tokens, t_counters = team[1], team[2], team[4]
    for src, kind, rolling, q in dims:
        if src >= 0:
            if src >= n:
                # A limit not counted yet (its counter not made): nothing to compare.
                continue
            c = counters[src]
            u = (c.sum if rolling else c.used) + c.held
            e = est_nano if kind == _SPEND else estimate_tokens if kind == _TOKENS else 1
        elif src <= _TEAM_COUNTER:
            c = t_counters[_TEAM_COUNTER - src]
            u = (c.sum if rolling else c.used) + c.held
            e = est_nano if kind == _SPEND else estimate_tokens if kind == _TOKENS else 1
        elif src == _PERIOD:
            u, e = period_nano, est_nano
        elif src == _SESSION:
            u, e = session_nano, est_nano
        elif src == _MODEL:
            u, e = model_tokens, estimate_tokens
        elif src == _TEAM_PERIOD:
            u, e = t_period, est_nano
        else:
            u, e = t_tokens, estimate_tokens
        top, below, _ = q
        p = u + e
        if p >= below or u >= below:
            quick = False
            break
        r = p / top
        # The rounded usage grows with r: one no larger than the largest so far cannot be taken.
        if r > top_r:
            top_r = r
            # ratio() inlined, as in _decide.
            x = r * _SCALE
            f = _floor(x)
            pct = (f + 1 if x - f >= 0.5 else f) / _SCALE
            if pct > w_pct:
                w_pct, w_p, w_q = pct, p, q
    if quick:
        if w_q is None:
            return OK_RESULT
        if w_q[2]:
            value, limit = to_dollars(int(w_p)), to_dollars(int(w_q[0]))
        else:
            value, limit = w_p, w_q[0]
        last = rules.last_ok
        if last.usage_pct == w_pct and last.current_value == value and last.limit_value == limit:
            return last
        rules.last_ok = result = GuardResult("ok", None, w_pct, value, limit, None)
        return result
    rows: list[_Row] = []
    _rows(rules, rows, period_nano, session_nano, model, model_tokens, est_nano, estimate_tokens, period_end,
          session_end, counters)  # fmt: skip
    if team is not None:
        _rows(team[0], rows, team[1], 0, model, team[2], est_nano, estimate_tokens, team[3], None, team[4])
    if not rows:
        return OK_RESULT
    return _decide(rows)


def _rows(
    rules: Rules,
    rows: list[_Row],
    period_nano: float,
    session_nano: float,
    model: str | None,
    model_tokens: float,
    est_nano: float,
    estimate_tokens: float,
    period_end: float | None,
    session_end: float | None,
    counters: Sequence[LimitCounter],
) -> None:
    """The rows of one plan's dimensions for _decide (a team plan's: its rules' ``team:`` reasons, no session)."""
    plan = rules.plan
    n = len(counters)
    spec = rules.period
    if spec is not None:
        rows.append(
            (rules.prefix + "total_spend", "spend", "period", None, period_nano, est_nano, *spec,
             # A cap (or hard gate) of 0 never lifts by itself, nor prepaid credits with no allowance (a grant does).
             period_end if spec[2] > 0 and not plan.prepaid else None, None)
        )  # fmt: skip
    spec = rules.session
    if spec is not None:
        rows.append(("session_spend", "spend", "session", None, session_nano, est_nano, *spec,
                     session_end if spec[2] > 0 else None, None))  # fmt: skip
    cap = None if model is None else plan.model_limits.get(model)
    if model is not None and cap is not None:
        rows.append((f"{rules.prefix}model_limit:{model}", "tokens", "period", None, model_tokens, estimate_tokens,
                     cap, plan.soft_gate_at * cap, plan.hard_gate_at * cap,
                     period_end if plan.hard_gate_at * cap > 0 else None, None))  # fmt: skip
    if rules.rows:
        for i, (lim, reason, top_l, soft_mark, hard_mark, scope) in enumerate(rules.rows):
            if i >= n:
                break
            if lim.model is not None and lim.model != model:
                continue
            c = counters[i]
            metric = lim.metric
            est = est_nano if metric == "spend" else estimate_tokens if metric == "tokens" else 1
            # counters.used_of and resets_of, inlined (the guard's hot loop).
            if lim.window == "rolling":
                used, reset = c.sum, c.resets
            else:
                used, reset = c.used, c.end
            rows.append((reason, metric, lim.window, lim.duration_minutes, used + c.held, est, top_l, soft_mark,
                         hard_mark, reset if hard_mark > 0 else None, scope))  # fmt: skip


def _decide(rows: list[_Row]) -> GuardResult:
    w_rank = _OK
    w_pct = 0.0
    w_reset = 0.0
    w_row: _Row | None = None
    for row in rows:
        u = row[4]
        e = row[5]
        top = row[6]
        projected = u + e
        if top > 0:
            # ratio() inlined (the guard's hot loop): projected / top rounded half up to 1e-6.
            x = projected / top * _SCALE
            f = _floor(x)
            pct = (f + 1 if x - f >= 0.5 else f) / _SCALE
        else:
            pct = 1.0
        tol = 0 if row[1] == "spend" else top * _EPSILON
        hard_mark = row[8]
        if top <= 0 or u >= hard_mark - tol or (e > 0 and projected > hard_mark + tol):
            r = _HARD
        elif projected >= row[7] - tol:
            r = _SOFT
        else:
            r = _OK
        reset = row[9]
        rs = _INF if reset is None else reset
        if w_row is None or r > w_rank:
            take = True
        elif r == w_rank:
            take = rs > w_reset if r == _HARD and rs != w_reset else pct > w_pct
        else:
            take = False
        if take:
            w_rank, w_pct, w_reset, w_row = r, pct, rs, row
    assert w_row is not None
    reason, metric, window, duration, u, e, top = w_row[:7]
    scope = w_row[10]
    money = metric == "spend"
    value = to_dollars(int(u + e)) if money else u + e
    limit = to_dollars(int(top)) if money else top
    if w_rank == _OK:
        return GuardResult("ok", None, w_pct, value, limit, None)
    used, est = (to_dollars(int(u)), to_dollars(int(e))) if money else (u, e)
    return GuardResult(
        _STATUS[w_rank],  # type: ignore[arg-type]
        reason,
        w_pct,
        value,
        limit,
        describe(w_rank == _HARD, reason, metric, window, duration, used, est, limit, scope),
        None if w_reset == _INF else iso(w_reset),
    )
