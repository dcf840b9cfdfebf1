"""What the library holds for one user: plan, period counters, sessions, reservations."""

from __future__ import annotations

import datetime as dt
import time
from typing import TYPE_CHECKING

from .periods import calendar_month
from .recent_calls import RecentCalls
from .types import BillingPeriod, PlanConfig, UsageEvent, UserState
from .user_sessions import Session, Sessions

if TYPE_CHECKING:
    from .flow import Handle

# Distinct models whose recent calls are remembered per user.
RECENT_MODELS = 256
# The default session window (session_timeout_minutes) for a user whose plan is not known.
DEFAULT_TIMEOUT = 30 * 60.0


def iso(t: float) -> str:
    """UTC, milliseconds, ``Z``: the service's own form (strftime: several times cheaper than datetime)."""
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t))}.{int(t * 1000) % 1000:03d}Z"


def parse_time(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


class UserEntry:
    __slots__ = (
        "config",
        "cost_by_model",
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
        self.config: PlanConfig | None = None
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
        )

    def idle(self, now: float) -> bool:
        return self.in_flight == 0 and self.pending == 0 and self.sessions.idle(now, self.timeout)
