"""The guard's quick pass (dimensions.evaluate_nano) gives what the full evaluation gives: random plans with
SPEC's caps and calendar windows, usages around their soft and hard marks, evaluated both ways
(evaluate_plan, which takes the quick pass when every dimension is below its soft mark, against
evaluate_dimensions, which always decides over every row)."""

from __future__ import annotations

import dataclasses
import random

from meterline.counters import LimitCounter, unit_of
from meterline.dimensions import Dimension, evaluate_dimensions, evaluate_plan
from meterline.money import to_dollars
from meterline.plan_rules import OK_RESULT
from meterline.types import PlanConfig

METRICS = ("spend", "tokens", "requests")


def _near(rng: random.Random, top: float, whole: bool) -> float:
    """A usage below, at or past a cap's marks, or 0."""
    x = rng.choice([0.0, rng.uniform(0, 0.5), rng.uniform(0.7, 0.85), rng.uniform(0.95, 1.05), 1.0, 0.8])
    v = top * x
    return float(round(v)) if whole else round(v, 6)


def test_the_quick_pass_decides_as_the_full_evaluation() -> None:
    rng = random.Random(40)
    quick = 0
    for case in range(3000):
        soft = rng.choice([0.5, 0.8, 0.9, 1.0])
        hard = rng.choice([soft, 1.0])
        limits = []
        for i in range(rng.randint(0, 4)):
            metric = rng.choice(METRICS)
            top = rng.choice([0, 1, 5, 60, 1000, 1e6, 1e9]) if metric != "spend" else rng.choice([0, 0.1, 1, 5, 1e7])
            limits.append(
                {
                    "name": f"l{i}",
                    "metric": metric,
                    "max": top,
                    "window": rng.choice(["minute", "day", "month"]),
                    "model": rng.choice([None, None, "m", "other"]),
                    "soft_gate_at": rng.choice([None, 0.5]),
                }
            )
        period_cap = rng.choice([None, 1.0, 50.0, 1e9])
        session_cap = rng.choice([None, 0.5, 1e9])
        model_cap = rng.choice([None, 1000, 10**12])
        raw = {
            "max_spend_per_period": period_cap,
            "max_spend_per_session": session_cap,
            "soft_gate_at": soft,
            "hard_gate_at": hard,
            "model_limits": {} if model_cap is None else {"m": {"max_tokens_per_period": model_cap}},
            "limits": limits,
        }
        plan = PlanConfig.parse(raw)
        model = rng.choice([None, "m", "other"])
        period = _near(rng, period_cap or 1.0, False)
        session = _near(rng, session_cap or 1.0, False)
        tokens = _near(rng, float(model_cap or 1000), True)
        est_cost = rng.choice([0.0, 0.01, 0.5])
        est_tokens = rng.choice([0.0, 10.0, 500.0])
        counters = []
        dims = []
        if period_cap is not None:
            dims.append(Dimension("total_spend", "spend", "period", period_cap, period, est_cost, soft, hard, 1e9))
        if session_cap is not None:
            dims.append(Dimension("session_spend", "spend", "session", session_cap, session, est_cost, soft, hard, 2e9))
        if model == "m" and model_cap is not None:
            dims.append(Dimension("model_limit:m", "tokens", "period", model_cap, tokens, est_tokens, soft, hard, 1e9))
        for lim in plan.limits:
            c = LimitCounter()
            c.start, c.end = 0.0, 3e9
            used = _near(rng, lim.max or 1, lim.metric != "spend")
            c.used = unit_of(lim.metric, used)
            counters.append(c)
            if lim.model is not None and lim.model != model:
                continue
            est = est_cost if lim.metric == "spend" else est_tokens if lim.metric == "tokens" else 1
            lim_soft = soft if lim.soft_gate_at is None else lim.soft_gate_at
            money_used = to_dollars(int(c.used)) if lim.metric == "spend" else used
            resets = c.end if lim.max > 0 else None
            dims.append(Dimension(f"limit:{lim.name}", lim.metric, lim.window, lim.max, money_used, est, lim_soft, hard,
                                  resets))  # fmt: skip
        got = evaluate_plan(plan, period, session, model, tokens, est_cost, est_tokens, 1e9, 2e9, counters)
        want = evaluate_dimensions(dims) if dims else OK_RESULT
        assert dataclasses.asdict(got) == dataclasses.asdict(want), f"case {case}: {raw}, model {model}"
        quick += got.status == "ok"
    # Both paths were taken many times.
    assert 300 < quick < 2700, quick
