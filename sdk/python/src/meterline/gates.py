"""Gate evaluation (pure): every dimension of a plan against its soft and hard thresholds; the
worst dimension decides (then the highest usage_pct)."""

from __future__ import annotations

import math

from .money import ratio, to_dollars, to_nano
from .types import GuardResult, PlanConfig

_OK, _SOFT, _HARD = 0, 1, 2
_STATUS = ("ok", "soft_gate", "hard_gate")
# Tokens: a relative tolerance for marks that are not whole (0.8 x 1001). Money is compared in
# whole nano-dollars (money.py), exactly.
_EPSILON = 1e-9
_TOTAL, _SESSION, _MODEL = 1, 2, 3

OK_RESULT = GuardResult("ok", None, 0.0, 0.0, 0.0, None)


def evaluate(
    plan: PlanConfig | None,
    period_cost: float,
    session_cost: float,
    model: str | None,
    model_tokens: float,
    estimate_cost: float = 0.0,
    estimate_tokens: float = 0.0,
) -> GuardResult:
    """Reaching ``hard_gate_at`` of a limit blocks; with an estimate, so does a call whose estimate
    would take usage past it (one that would land exactly on the cap runs). A limit of 0 blocks all."""
    if plan is None:
        return OK_RESULT
    soft = plan.soft_gate_at
    hard = plan.hard_gate_at
    w_rank, w_pct, w_used, w_est, w_limit, w_kind = _OK, 0.0, 0.0, 0.0, 0.0, 0
    dims: list[tuple[int, float, float, float]] = []
    if plan.max_spend_per_period is not None:
        dims.append((_TOTAL, period_cost, estimate_cost, plan.max_spend_per_period))
    if plan.max_spend_per_session is not None:
        dims.append((_SESSION, session_cost, estimate_cost, plan.max_spend_per_session))
    if model is not None:
        cap = plan.model_limits.get(model)
        if cap is not None:
            dims.append((_MODEL, model_tokens, estimate_tokens, float(cap)))
    for kind, used, est, limit in dims:
        money = kind != _MODEL
        u = to_nano(used) if money else used
        e = to_nano(est) if money else est
        lim = to_nano(limit) if money else limit
        projected = u + e
        pct = ratio(projected, lim) if lim > 0 else 1.0
        tol = 0 if money else lim * _EPSILON
        hard_mark = _js_round(hard * lim) if money else hard * lim
        soft_mark = _js_round(soft * lim) if money else soft * lim
        rank = _OK
        if lim <= 0 or u >= hard_mark - tol or (e > 0 and projected > hard_mark + tol):
            rank = _HARD
        elif projected >= soft_mark - tol:
            rank = _SOFT
        if rank > w_rank or (rank == w_rank and (pct > w_pct or w_kind == 0)):
            w_rank, w_pct, w_kind = rank, pct, kind
            w_used, w_est, w_limit = (_dollars(u), _dollars(e), _dollars(lim)) if money else (used, est, limit)
    if w_rank == _OK:
        if w_kind == 0:
            return OK_RESULT
        return GuardResult("ok", None, w_pct, _plus(w_kind, w_used, w_est), w_limit, None)
    reason = "total_spend" if w_kind == _TOTAL else "session_spend" if w_kind == _SESSION else f"model_limit:{model}"
    return GuardResult(
        _STATUS[w_rank],  # type: ignore[arg-type]
        reason,
        w_pct,
        _plus(w_kind, w_used, w_est),
        w_limit,
        describe(w_rank == _HARD, w_kind, model, w_used, w_est, w_limit, w_pct),
    )


def _plus(kind: int, used: float, est: float) -> float:
    """Usage plus the estimate: money exactly (whole nano-dollars), tokens as they are."""
    return used + est if kind == _MODEL else to_dollars(to_nano(used) + to_nano(est))


def _dollars(nano: float) -> float:
    return to_dollars(int(nano))


def _js_round(x: float) -> int:
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


def describe(hard: bool, kind: int, model: str | None, used: float, est: float, limit: float, pct: float) -> str:
    """What was used (settled calls plus the estimates of calls in flight) and, apart, what this call's
    estimate would add: the projection is not spend, and must not read as such. The TypeScript
    client's words, number for number."""
    what = "limit reached" if hard else "approaching the limit"

    def share(x: float) -> str:
        return f"{math.floor(x / limit * 100 + 0.5) if limit > 0 else 100}%"

    if kind == _MODEL:
        head = f"Token {what} for {model} this period: {_num(used)} of {_num(limit)} tokens used ({share(used)})"
        if est > 0:
            total = used + est
            head += f"; this call's estimate of {_num(est)} tokens would bring it to {_num(total)} ({share(total)})"
        return head
    scope = "Spend" if kind == _TOTAL else "Session spend"
    head = f"{scope} {what}: ${used:.4f} of ${limit:.2f} spent ({share(used)})"
    if est > 0:
        total = used + est
        head += f"; this call's estimate of ${est:.4f} would bring it to ${total:.4f} ({share(total)})"
    return head


def _num(x: float) -> str:
    """A count as JavaScript prints a number: integers without a fraction."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e21 else repr(float(x))
