"""What the library holds for one user: plan, period counters, sessions, reservations."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .counters import LimitCounter, advance, count_in, hard_mark_of, unit_of
from .credits import CreditsNews, UserCredits, with_cap
from .periods import calendar_month, iso, parse_time
from .recent_calls import RecentCalls
from .types import BillingPeriod, CreditBalance, PlanConfig, PlanLimit, UsageEvent, UserState
from .user_sessions import Session, Sessions

if TYPE_CHECKING:
    from .flow import Handle

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
        "models",
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
        self.unpriced: list[tuple[UsageEvent, Session]] = []
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
            self.config = with_cap(self.config, c.cap)
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
            plan=self.plan,
            billing_period=BillingPeriod(self.period_start, self.period_end),
            session_id=own.id,
            period_cost=self.period_cost,
            session_cost=own.cost,
            period_tokens_by_model=dict(self.tokens_by_model),
            period_cost_by_model=dict(self.cost_by_model),
            credits=None
            if self.credits is None
            else CreditBalance(self.credits.balance(self.period_cost), self.credits.pending, self.credits.low_at),
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
