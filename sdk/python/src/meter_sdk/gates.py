"""Gate evaluation (pure): every dimension of a plan against its soft and hard thresholds; the
worst dimension decides (then the highest usage_pct)."""

from __future__ import annotations

from .types import GuardResult, PlanConfig

_OK, _SOFT, _HARD = 0, 1, 2
_STATUS = ("ok", "soft_gate", "hard_gate")
# Relative tolerance: sums of float prices (0.1 + 0.1 + ...) land a hair off a threshold.
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
        projected = used + est
        pct = projected / limit if limit > 0 else 1.0
        tol = limit * _EPSILON
        rank = _OK
        if limit <= 0 or used >= hard * limit - tol or (est > 0 and projected > hard * limit + tol):
            rank = _HARD
        elif projected >= soft * limit - tol:
            rank = _SOFT
        if rank > w_rank or (rank == w_rank and (pct > w_pct or w_kind == 0)):
            w_rank, w_pct, w_used, w_est, w_limit, w_kind = rank, pct, used, est, limit, kind
    if w_rank == _OK:
        if w_kind == 0:
            return OK_RESULT
        return GuardResult("ok", None, w_pct, w_used + w_est, w_limit, None)
    reason = "total_spend" if w_kind == _TOTAL else "session_spend" if w_kind == _SESSION else f"model_limit:{model}"
    return GuardResult(
        _STATUS[w_rank],  # type: ignore[arg-type]
        reason,
        w_pct,
        w_used + w_est,
        w_limit,
        describe(w_rank == _HARD, w_kind, model, w_used, w_est, w_limit, w_pct),
    )


def describe(hard: bool, kind: int, model: str | None, used: float, est: float, limit: float, pct: float) -> str:
    """What was spent, and apart from it what the call's estimate would add: never a projection as spend."""
    what = "limit reached" if hard else "approaching the limit"
    p = f"{round(pct * 100)}%"
    if kind == _MODEL:
        head = f"Token {what} for {model} this period: {used:g} of {limit:g} tokens used"
        return head + (
            f"; this call's estimate of {est:g} tokens would make {used + est:g} ({p})" if est > 0 else f" ({p})"
        )
    scope = "Spend" if kind == _TOTAL else "Session spend"
    head = f"{scope} {what}: ${used:.4f} spent of ${limit:.2f}"
    if est > 0:
        return head + f"; this call's estimate of ${est:.4f} would make ${used + est:.4f} ({p})"
    return head + f" ({p})"
