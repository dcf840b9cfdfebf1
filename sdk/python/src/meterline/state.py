"""What the library holds for one user: plan, period counters, sessions, reservations; for a member of a team,
the team's entry shared with the other members (teams.py) and its own counters of the team plan's scope-member
limits."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .counters import LimitCounter, advance, count_in, hard_mark_of, unit_of
from .credits import CreditsNews, UserCredits, with_cap
from .periods import calendar_month, iso, parse_time
from .recent_calls import RecentCalls
from .teams import TeamEntry, advance_all, count_all, keep_counters, member_scoped, period_sums
from .types import CreditBalance, PlanConfig, PlanLimit, UserState
from .user_sessions import Session, Sessions

if TYPE_CHECKING:
    from .flow import Handle
    from .queue import QueuedUsage

# Distinct models whose recent calls are remembered per user.
RECENT_MODELS = 256
# The default session window (session_timeout_minutes) for a user whose plan is not known.
DEFAULT_TIMEOUT = 30 * 60.0


class UserEntry:
    __slots__ = (
        "config",
        "cost_by_model",
        "counters",
        "credits",
        "fail_closed",
        "gate_marks",
        "in_flight",
        "load_failed",
        "loaded",
        "member_counters",
        "member_plan",
        "models",
        "naming",
        "pending",
        "period_cost",
        "period_end",
        "period_end_t",
        "period_start",
        "plan",
        "plan_id",
        "recent",
        "recheck",
        "refresh_at",
        "refreshing",
        "reserved_cost",
        "reserved_tokens",
        "service_user_id",
        "sessions",
        "started",
        "team",
        "team_due",
        "team_mix",
        "team_mix_of",
        "timeout",
        "tokens_by_model",
        "unknown",
        "unpriced",
        "user_id",
        "windows_due",
    )

    def __init__(self, user_id: str, now: float) -> None:
        self.user_id = user_id
        self.service_user_id: str | None = None
        self.plan = "none"
        # The plan in force (None without one): a change of it is announced by GET /config/changes.
        self.plan_id: str | None = None
        # Reload once more at the next flush tick: the change marker named this user, and a read racing
        # the change may have been stale.
        self.recheck = False
        # None: no plan in force (or not loaded); nothing is gated or priced.
        # With credits, its period cap includes the balance (credits.cap).
        self.config: PlanConfig | None = None
        # The plan model names are normalized over: ``config``, or the team plan for a member priced at it.
        self.naming: PlanConfig | None = None
        # The user's team (with a subscription in force), shared with its other members; None: none.
        self.team: TeamEntry | None = None
        # One per entry of the team plan's limits: this member's counter of a scope-member one (others unread),
        # made for ``member_plan`` (another team plan, from another member's view, re-keys them).
        self.member_counters: list[LimitCounter] = []
        self.member_plan: PlanConfig | None = None
        # The counters a team check reads, one per team plan limit (the team's or the member's by scope), made
        # from the lists in ``team_mix_of``.
        self.team_mix: list[LimitCounter] = []
        self.team_mix_of: tuple[object, object] | None = None
        # The earliest time one of ``member_counters`` must be brought forward; -inf: now (as windows_due).
        self.team_due = -math.inf
        # Prepaid credits when the plan has them enabled with an allowance (credits.py).
        self.credits: UserCredits | None = None
        self.loaded = False
        # The service answered 404: the user is not registered (permissive defaults).
        self.unknown = False
        self.started = False
        # Until the service answers, the period is the calendar month (what it uses without a plan).
        start, end = calendar_month(now)
        self.period_start = iso(start)
        self.period_end = iso(end)
        self.period_end_t = end
        self.period_cost = 0.0
        self.tokens_by_model: dict[str, int] = {}
        self.cost_by_model: dict[str, float] = {}
        # One per entry of ``config.limits``, in plan order: what each window counted (counters.py).
        self.counters: list[LimitCounter] = []
        # The earliest time a counter must be brought forward (advance_windows); -inf: now. Whatever replaces or
        # counts into the counters sets it back to -inf (expired()).
        self.windows_due = -math.inf
        self.reserved_cost = 0.0
        self.reserved_tokens: dict[str, float] = {}
        self.in_flight = 0
        self.pending = 0
        self.unpriced: list[tuple[QueuedUsage, Session]] = []
        self.sessions = Sessions(now)
        self.timeout = DEFAULT_TIMEOUT
        self.refresh_at = 0.0
        self.refreshing: Handle | None = None
        self.load_failed = False
        # The view could not be loaded and the client fails closed: calls are hard-gated.
        self.fail_closed = False
        # Gate events per (gate_reason, kind, session for session_spend): (time of the last one written,
        # how many suppressed since).
        self.gate_marks: dict[tuple[str, str, str | None], list[float]] | None = None
        self.models: dict[str, str] = {}
        # The last real calls per normalized model ("" for none): what a call reserves by default.
        self.recent: dict[str, RecentCalls] | None = None

    def recent_calls(self, model: str | None) -> RecentCalls | None:
        """The user's recent calls of ``model``; None before the first one (priced under a plan) ended."""
        return None if self.recent is None else self.recent.get(model or "")

    def called(self, model: str | None, cost: float, tokens: float) -> None:
        """A call priced under the user's plan ended: what it cost is what the next calls of the model reserve."""
        if self.recent is None:
            self.recent = {}
        recent = self.recent.get(model or "")
        if recent is None:
            if len(self.recent) >= RECENT_MODELS:
                self.recent.clear()
            recent = self.recent[model or ""] = RecentCalls()
        recent.add(cost, tokens)

    def credit_news(self, now: float) -> CreditsNews:
        """What the credits callbacks have not heard yet (credits.py): expiries due by ``now``, the low mark and 0
        crossed. An expiry lowers the cap at once and the view is read again at the next tick. Caller holds the
        lock."""
        c = self.credits
        if c is None:
            return []
        news, expired = c.news(self.user_id, self.period_cost, now)
        if expired and self.config is not None:
            self.config = with_cap(self.config, c.cap, c.allowance)
            self.recheck = True
        return news

    def period(self) -> tuple[float, float]:
        """The billing period, epoch seconds."""
        return parse_time(self.period_start), self.period_end_t

    def advance_windows(self, now: float) -> None:
        """The windows brought to ``now``: a calendar window past its end gives way to the next (in the plan's
        time zone), a rolling one drops what aged out. Each counter is touched only past its next expiry, and the
        earliest of those is kept, so a guard between them compares one number."""
        if now < self.windows_due:
            return
        plan = self.config
        if plan is None or not plan.limits:
            self.windows_due = math.inf
            return
        due = math.inf
        for lim, c in zip(plan.limits, self.counters, strict=False):
            rolling = lim.window == "rolling"
            if now >= (c.valid_until if rolling else c.end):
                advance(lim, c, now, plan.time_zone, self.period(), hard_mark_of(lim, plan.hard_gate_at))
            until = c.valid_until if rolling else c.end
            if until < due:
                due = until
        self.windows_due = due

    def sync_team(self, now: float) -> None:
        """The member's counters fit the team plan in force (another member's view may have changed it)."""
        t = self.team
        plan = None if t is None else t.config
        if plan is self.member_plan:
            return
        self.member_counters = (
            []
            if plan is None or t is None
            else keep_counters(self.member_plan, self.member_counters, plan, now, t.period())
        )
        self.member_plan = plan
        self.team_due = -math.inf

    def advance_team(self, now: float) -> list[LimitCounter]:
        """The team's windows and the member's team windows brought to ``now`` (after sync_team); the counters a
        team check reads, one per team plan limit."""
        t = self.team
        plan = None if t is None else t.config
        if t is None or plan is None or not plan.limits:
            return self.team_mix
        if plan is not self.member_plan:
            self.sync_team(now)
        if now >= t.windows_due:
            t.advance_windows(now)
        if now >= self.team_due:
            self.team_due = advance_all(plan, self.member_counters, now, t.period(), True)
        of = self.team_mix_of
        if of is None or of[0] is not t.counters or of[1] is not self.member_counters:
            self.team_mix = [
                m if member_scoped(lim) else c
                for lim, c, m in zip(plan.limits, t.counters, self.member_counters, strict=False)
            ]
            self.team_mix_of = (t.counters, self.member_counters)
        return self.team_mix

    def count_team(self, model: str | None, tokens: float, cost: float, at: float, now: float) -> None:
        """A member's call at ``at`` counted for the team (its sums, its scope-team windows) and in the member's
        scope-member windows."""
        t = self.team
        if t is None or t.config is None:
            return
        self.sync_team(now)
        t.count(model, tokens, cost, at, now)
        if t.config.limits:
            advance_all(t.config, self.member_counters, now, t.period(), True)
            count_all(t.config.limits, self.member_counters, True, model, tokens, cost, at, now)
            self.team_due = -math.inf

    def expired(self) -> None:
        """The counters were replaced or counted into: advance_windows looks at each again."""
        self.windows_due = -math.inf

    def count_windows(self, model: str | None, tokens: float, cost: float, at: float, now: float) -> None:
        """A call at ``at`` counted in every window of the plan whose model matches: one request, its tokens,
        its cost."""
        plan = self.config
        if plan is None or not plan.limits:
            return
        self.advance_windows(now)
        for lim, c in zip(plan.limits, self.counters, strict=False):
            if lim.model is not None and lim.model != model:
                continue
            amount = unit_of("spend", cost) if lim.metric == "spend" else tokens if lim.metric == "tokens" else 1
            count_in(lim, c, at, amount, now)
        # A rolling window's sum and reset are recomputed from its buckets.
        self.expired()

    def snapshot(self, now: float) -> UserState:
        own = self.sessions.current(now, self.timeout)
        return UserState(
            user_id=self.user_id,
            service_user_id=self.service_user_id,
            session_id=own.id,
            session_cost=own.cost,
            **period_sums(self),
            credits=None
            if self.credits is None
            else CreditBalance(self.credits.balance(self.period_cost), self.credits.pending, self.credits.low_at),
            team=None if self.team is None or self.team.config is None else self.team.snapshot(),
        )

    def idle(self, now: float) -> bool:
        return self.in_flight == 0 and self.pending == 0 and self.sessions.idle(now, self.timeout)


def hold_windows(
    limits: tuple[PlanLimit, ...],
    counters: list[LimitCounter],
    model: str | None,
    cost: float,
    tokens: float,
    sign: int,
) -> None:
    """A reserved call's amounts added to (sign 1) or taken from (-1) what its windows' counters hold: on
    every dimension it touches, one request for the call itself."""
    for lim, c in zip(limits, counters, strict=False):
        if lim.model is not None and lim.model != model:
            continue
        amount = unit_of("spend", cost) if lim.metric == "spend" else tokens if lim.metric == "tokens" else 1
        c.held = max(0, c.held + sign * amount)


def hold_team(hold: Any, sign: int) -> None:
    """A reserved call of a member held on (sign 1) or given back to (-1) its team: the team's sums, and the team
    plan's windows it touches (the team's or the member's counter by scope), those it was held on."""
    t = hold.team
    if t is None:
        return
    t.hold(hold.model, hold.cost, hold.tokens, sign)
    if hold.team_counters:
        hold_windows(hold.team_limits, hold.team_counters, hold.model, hold.cost, hold.tokens, sign)
