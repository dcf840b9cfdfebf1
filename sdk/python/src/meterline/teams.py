"""What the library holds for one team (BUDGETS.md section 4): the team plan, the team's period sums and its
scope-``team`` windows, and what its members' calls in flight hold. One per team id in the client, shared by every
member it serves: a member's call counts here at once, so the next member's check sees it. Members' session views
carry the team's block; each is merged in as a user's view is (session_view.py): the larger of local and service
figures in the same period, the service's on a new period, an older period's view ignored (members' views arrive
in any order)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict

from .counters import LimitCounter, advance, count_in, hard_mark_of, merge_view, new_counter, unit_of
from .credits import blocked_by_credits, with_cap
from .money import add_dollars
from .periods import iso, parse_time, roll_on
from .types import BillingPeriod, LimitCredits, PlanConfig, PlanLimit, TeamState
from .windows import dimension_key


def member_scoped(lim: PlanLimit) -> bool:
    """A team plan's limit counted for each member apart (``scope: member``), else over the team's sum."""
    return lim.scope == "member"


class TeamEntry:
    __slots__ = (
        "config",
        "cost_by_model",
        "counters",
        "period_cost",
        "period_end",
        "period_end_t",
        "period_start",
        "period_start_t",
        "plan",
        "plan_id",
        "pool",
        "reserved_cost",
        "reserved_tokens",
        "service_team_id",
        "team_id",
        "tokens_by_model",
        "windows_due",
    )

    def __init__(self, team_id: str) -> None:
        self.team_id = team_id
        self.service_team_id: str | None = None
        self.plan = "none"
        self.plan_id: str | None = None
        # The team plan; None until a view named the team with a subscription in force.
        self.config: PlanConfig | None = None
        self.period_start = ""
        self.period_start_t = -math.inf
        self.period_end = ""
        self.period_end_t = -math.inf
        self.period_cost = 0.0
        self.tokens_by_model: dict[str, int] = {}
        self.cost_by_model: dict[str, float] = {}
        # One per entry of ``config.limits``: the team's counter of a scope-team limit (scope-member ones are the
        # members').
        self.counters: list[LimitCounter] = []
        # The team's shared pool (the team plan with credits): its allowance and low mark; None without.
        self.pool: tuple[float, float | None] | None = None
        self.reserved_cost = 0.0
        self.reserved_tokens: dict[str, float] = {}
        # The earliest time a scope-team counter must be brought forward (advance_windows); -inf: now. Whatever
        # replaces or counts into the counters sets it back to -inf.
        self.windows_due = -math.inf

    def apply(self, tv: dict[str, Any], config: PlanConfig, limits: Any, now: float) -> bool:
        """A member's view named this team (``config``: its plan_config read). False when the view is of an older
        period than the one held (a member's stale view after another's of the new period): nothing is taken."""
        bp = tv["billing_period"]
        start = parse_time(bp["start"])
        reset = self.service_team_id is not None and self.service_team_id != tv.get("service_team_id")
        held = -math.inf if self.config is None else parse_time(self.period_start)
        if not reset and start < held:
            return False
        same = (
            not reset and self.config is not None and self.period_start == bp["start"] and self.period_end == bp["end"]
        )
        u = tv.get("current_usage") or {}
        merge_usage(self, u, same)
        self.period_start = bp["start"]
        self.period_start_t = start
        self.period_end = bp["end"]
        self.period_end_t = parse_time(bp["end"])
        self.service_team_id = tv.get("service_team_id")
        self.plan = str(tv.get("plan", "none"))
        plan_id = tv.get("plan_id")
        self.plan_id = plan_id if isinstance(plan_id, str) else None
        before = self.config
        capped = team_cap(config, limits)
        self.pool = None if capped is config else (config.max_spend_per_period or 0.0, config.credits_low_at)
        self.config = config = capped
        period = self.period()
        self.counters = keep_counters(None if reset else before, self.counters, config, now, period)
        self.windows_due = -math.inf
        for i, v in team_limits(config, limits):
            lim = config.limits[i]
            if not member_scoped(lim):
                merge_view(lim, self.counters[i], v, now, config.time_zone, period)
        return True

    def period(self) -> tuple[float, float]:
        return self.period_start_t, self.period_end_t

    def pool_block(self, gate_reason: str | None, status: str, current_value: float) -> LimitCredits | None:
        """What a block of ``team:total_spend`` names of the team's pool when the pool is what ran out (spend past
        the team allowance), as a user's credits: the balance the cap leaves after the team's spend."""
        pool = self.pool
        config = self.config
        if pool is None or config is None or config.max_spend_per_period is None:
            return None
        reason = "total_spend" if gate_reason == "team:total_spend" else None
        if not blocked_by_credits(reason, status, current_value, pool[0]):
            return None
        return LimitCredits(add_dollars(config.max_spend_per_period, -self.period_cost), pool[1])

    def roll_over(self, now: float) -> None:
        """The period ended and no view gave a new one: the sums are cleared, the next period as long as the last."""
        new_start, end = roll_on(parse_time(self.period_start), self.period_end_t, now)
        self.period_start = iso(new_start)
        self.period_start_t = new_start
        self.period_end = iso(end)
        self.period_end_t = end
        self.period_cost = 0.0
        self.tokens_by_model = {}
        self.cost_by_model = {}

    def advance_windows(self, now: float) -> None:
        """The scope-team windows brought to ``now``, each touched only past its next expiry, and the earliest of
        those kept, so a check between them compares one number."""
        if now < self.windows_due:
            return
        plan = self.config
        self.windows_due = math.inf if plan is None else advance_all(plan, self.counters, now, self.period(), False)

    def count(self, model: str | None, tokens: float, cost: float, at: float, now: float) -> None:
        """A member's call at ``at``: counted in the team's period sums and its scope-team windows."""
        plan = self.config
        if plan is None:
            return
        self.period_cost = add_dollars(self.period_cost, cost)
        if model is not None:
            self.tokens_by_model[model] = self.tokens_by_model.get(model, 0) + int(tokens)
            self.cost_by_model[model] = add_dollars(self.cost_by_model.get(model, 0.0), cost)
        if plan.limits:
            self.advance_windows(now)
            count_all(plan.limits, self.counters, False, model, tokens, cost, at, now)
            # A rolling window's sum and reset are recomputed from its buckets.
            self.windows_due = -math.inf

    def hold(self, model: str | None, cost: float, tokens: float, sign: int) -> None:
        """A member's reserved call holds (sign 1) or gives back (-1) its estimate on the team's sums."""
        self.reserved_cost = max(0.0, add_dollars(self.reserved_cost, sign * cost))
        if model is not None and tokens > 0:
            self.reserved_tokens[model] = max(0.0, self.reserved_tokens.get(model, 0) + sign * tokens)

    def snapshot(self) -> TeamState:
        return TeamState(team_id=self.team_id, service_team_id=self.service_team_id, **period_sums(self))


def team_cap(plan: PlanConfig, limits: Any) -> PlanConfig:
    """The team plan with the team's pool counted into its period cap (BUDGETS.md section 4): with credits,
    ``team:total_spend`` carries them and its max is the allowance, what the pool drew and its balance, as a user's
    ``total_spend``; locally the pool is what that cap leaves after the team's spend."""
    if not plan.credits_enabled or plan.max_spend_per_period is None:
        return plan
    for v in limits or ():
        if isinstance(v, dict) and v.get("reason") == "team:total_spend" and v.get("credits") is not None:
            return with_cap(plan, float(v["max"]), plan.max_spend_per_period)
    return plan


class Teams:
    """The teams of the members a client serves: one entry per team id."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[str, TeamEntry] = {}

    def of(self, team_id: str) -> TeamEntry:
        t = self.entries.get(team_id)
        if t is None:
            t = self.entries[team_id] = TeamEntry(team_id)
        return t

    def sweep(self, members: Iterable[Any]) -> None:
        """Drops the teams none of ``members`` (user entries) belongs to any more."""
        live = {id(m.team) for m in members if m.team is not None}
        for tid in [tid for tid, t in self.entries.items() if id(t) not in live]:
            del self.entries[tid]


class PeriodSums(TypedDict):
    """What UserState and TeamState both show: the plan, and the billing period's sums."""

    plan: str
    billing_period: BillingPeriod
    period_cost: float
    period_tokens_by_model: dict[str, int]
    period_cost_by_model: dict[str, float]


def period_sums(e: Any) -> PeriodSums:
    """The plan and the period's sums of ``e`` (a user's or a team's entry) for a snapshot, the dicts copied."""
    return {
        "plan": e.plan,
        "billing_period": BillingPeriod(e.period_start, e.period_end),
        "period_cost": e.period_cost,
        "period_tokens_by_model": dict(e.tokens_by_model),
        "period_cost_by_model": dict(e.cost_by_model),
    }


def merge_usage(e: Any, u: dict[str, Any], same: bool) -> None:
    """A view's period sums merged into ``e`` (a user's or a team's entry): the larger of local and service figures
    (``same`` period), else the service's."""
    tokens = {k: int(v) for k, v in (u.get("period_tokens_by_model") or {}).items()}
    costs = {k: float(v) for k, v in (u.get("period_cost_by_model") or {}).items()}
    period_cost = float(u.get("period_cost") or 0)
    if same:
        e.period_cost = max(e.period_cost, period_cost)
        e.tokens_by_model = _max_of(e.tokens_by_model, tokens)
        e.cost_by_model = _max_of(e.cost_by_model, costs)
    else:
        e.period_cost = period_cost
        e.tokens_by_model = tokens
        e.cost_by_model = costs


def _max_of(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = max(out.get(k, 0), v)
    return out


def keep_counters(
    before: PlanConfig | None,
    counters: Sequence[LimitCounter],
    plan: PlanConfig,
    now: float,
    period: tuple[float, float],
) -> list[LimitCounter]:
    """One counter per limit of ``plan``: those of ``before`` (``counters``, one per limit of it) that count the same
    thing (same metric, window, duration and model, same time zone) are kept (a renamed limit keeps its usage);
    others start empty. The same plan keeps its counters."""
    if before is plan and len(counters) == len(plan.limits):
        return list(counters) if not isinstance(counters, list) else counters
    kept: dict[str, LimitCounter] = {}
    if before is not None and before.time_zone == plan.time_zone:
        for old, counter in zip(before.limits, counters, strict=False):
            kept[_key(old)] = counter
    out = []
    for lim in plan.limits:
        # Two equal limits: the second starts from the service's figure.
        c = kept.pop(_key(lim), None)
        out.append(c if c is not None else new_counter(lim, now, plan.time_zone, period))
    return out


def _key(lim: PlanLimit) -> str:
    return dimension_key(lim.metric, lim.window, lim.duration_minutes, lim.model)


def team_limits(plan: PlanConfig, limits: Any) -> Iterable[tuple[int, dict[str, Any]]]:
    """The view's ``team:limit:<name>`` entries with the index of the team plan's limit each is about."""
    if not isinstance(limits, list):
        return
    names = {lim.name: i for i, lim in enumerate(plan.limits)}
    for v in limits:
        reason = str(v.get("reason", "")) if isinstance(v, dict) else ""
        if not reason.startswith("team:limit:"):
            continue
        i = names.get(str(v.get("name") or reason[len("team:limit:") :]))
        if i is not None:
            yield i, v


def advance_all(
    plan: PlanConfig, counters: Sequence[LimitCounter], now: float, period: tuple[float, float], member: bool
) -> float:
    """The windows of a team plan of one scope (``member``: the scope-member ones, else the others) brought to
    ``now``, each only past its next expiry; the earliest of those next expiries."""
    due = math.inf
    for lim, c in zip(plan.limits, counters, strict=False):
        if member_scoped(lim) != member:
            continue
        rolling = lim.window == "rolling"
        if now >= (c.valid_until if rolling else c.end):
            advance(lim, c, now, plan.time_zone, period, hard_mark_of(lim, plan.hard_gate_at))
        until = c.valid_until if rolling else c.end
        if until < due:
            due = until
    return due


def count_all(
    limits: Sequence[PlanLimit],
    counters: Sequence[LimitCounter],
    member: bool,
    model: str | None,
    tokens: float,
    cost: float,
    at: float,
    now: float,
) -> None:
    """A call counted in a team plan's windows of one scope whose model matches: one request, its tokens, its cost."""
    for lim, c in zip(limits, counters, strict=False):
        if member_scoped(lim) != member or (lim.model is not None and lim.model != model):
            continue
        amount = unit_of("spend", cost) if lim.metric == "spend" else tokens if lim.metric == "tokens" else 1
        count_in(lim, c, at, amount, now)
