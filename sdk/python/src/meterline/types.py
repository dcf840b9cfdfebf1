"""Records of the public API. Those that mirror the service's keep its snake_case field names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

GateStatus = Literal["ok", "soft_gate", "hard_gate"]


@dataclass(frozen=True, slots=True)
class GuardResult:
    status: GateStatus
    gate_reason: str | None
    """The deciding dimension: ``total_spend``, ``session_spend``, ``model_limit:<model>`` or ``limit:<name>`` (an
    entry of the plan's ``limits``); ``session_unavailable`` under fail_closed; None when ok. ``usage_pct``,
    ``current_value`` (with this call's estimate; dollars for spend, else tokens or requests) and
    ``limit_value`` are the deciding dimension's."""
    usage_pct: float
    current_value: float
    limit_value: float
    message: str | None
    resets_at: str | None = None
    """When the deciding dimension lets a call through again by itself (ISO 8601): the end of its window (a
    calendar window in the plan's time zone, the billing period, the library's own session) or, for a rolling
    window, when enough usage ages out. None when ok, when it never does (a max of 0) or is not known (a
    caller's session)."""


@dataclass(frozen=True, slots=True)
class GateContext:
    user_id: str
    session_id: str
    model: str | None


@dataclass(slots=True)
class UsageEvent:
    id: str
    user_id: str
    session_id: str | None
    timestamp: str
    model: str | None
    input_tokens: int
    output_tokens: int
    total_tokens: int
    tool_calls: list[str]
    cost_tokens: float
    cost_tools: float
    cost_total: float
    metadata: dict[str, Any]
    synced: bool = False
    """Whether the service has acknowledged the event."""
    lease_id: str | None = None
    """The budget lease the cost was spent from (``leases=True``)."""

    def wire(self) -> dict[str, Any]:
        """The form the service ingests: without ``synced``."""
        out: dict[str, Any] = {
            "id": self.id,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "timestamp": self.timestamp,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "tool_calls": self.tool_calls,
            "cost_tokens": self.cost_tokens,
            "cost_tools": self.cost_tools,
            "cost_total": self.cost_total,
            "metadata": self.metadata,
        }
        if self.lease_id is not None:
            out["lease_id"] = self.lease_id
        return out


@dataclass(frozen=True, slots=True)
class BillingPeriod:
    start: str
    end: str


@dataclass(frozen=True, slots=True)
class SessionStartState:
    user_id: str
    plan: str
    billing_period: BillingPeriod


@dataclass(frozen=True, slots=True)
class UserState:
    user_id: str
    service_user_id: str | None
    """None while the service does not know the user (or has not answered yet)."""
    plan: str
    billing_period: BillingPeriod
    session_id: str
    """The library's own session of the user (rotates after session_timeout_minutes)."""
    period_cost: float
    session_cost: float
    period_tokens_by_model: dict[str, int]
    period_cost_by_model: dict[str, float]
    credits: CreditBalance | None = None
    """The user's prepaid credits as the library counts them (the balance lowered by its own spend past the
    allowance since the last view); None when the plan has credits disabled or no allowance."""
    team: TeamState | None = None
    """The user's team as the library counts it (the team's sums over every member, with this process's calls
    not yet in a view); None when the user is in no team with a subscription in force."""


@dataclass(frozen=True, slots=True)
class TeamState:
    """A team as the library counts it (UserState.team)."""

    team_id: str
    """The product's id of the team (external_team_id)."""
    service_team_id: str | None
    plan: str
    """The team plan's name."""
    billing_period: BillingPeriod
    period_cost: float
    period_tokens_by_model: dict[str, int]
    period_cost_by_model: dict[str, float]


@dataclass(frozen=True, slots=True)
class CreditBalance:
    """A user's prepaid credits in dollars: the balance (below 0: an overdraft), grants not effective yet, and
    the plan's ``credits_low_at``."""

    balance: float
    pending: float
    low_at: float | None


@dataclass(frozen=True, slots=True)
class CreditsEvent:
    """What the credits callbacks get (on_credits_low, on_credits_depleted, on_credits_expired), in dollars: the
    balance as this process counts it after the event, the plan's ``credits_low_at``, and for an expiry the grant
    and what of it expired."""

    user_id: str
    balance: float
    low_at: float | None
    grant_id: str | None = None
    amount: float | None = None


@dataclass(frozen=True, slots=True)
class LimitCredits:
    """What a block names when the prepaid credits ran out (``LimitExceededError.credits``), in dollars."""

    balance: float
    low_at: float | None


@dataclass(frozen=True, slots=True)
class ManualEvent:
    id: str
    user_id: str
    cost: float
    model: str | None
    source: str
    created_at: str


@dataclass(frozen=True, slots=True)
class PortalToken:
    """A portal token from ``portal_token()``: hand ``token`` to the user's browser. Shown once."""

    token: str
    user_id: str
    #: ISO 8601; the token is refused from then on.
    expires_at: str


@dataclass(frozen=True, slots=True)
class MeterStats:
    queued: int
    sent: int
    dropped: int
    rejected: int
    users: int
    lease_requests: int | None = None
    # Of ``queued``, usage events held until their user's plan is known (to price them): they wait
    # while the service is unreachable or refuses the key.
    held: int = 0
    # The service refused the API key (401/403) and has accepted no request of this client since.
    key_refused: bool = False
    # Batches the service answered 429 (it holds as much as it stores in a few seconds): each stayed
    # queued and went again after its Retry-After. Growing steadily: this process sends faster than
    # the service stores.
    busy: int = 0
    # Users this process keeps a budget lease's book for (``leases=True`` only). A user's book goes once it has been
    # idle for ``lease_idle`` and its lease was given back, so it follows the users active lately, not all users ever
    # served.
    leased_users: int | None = None
    # The same for teams whose slices this process holds for their members (``leases=True`` only).
    leased_teams: int | None = None
    # Calls that waited for a lease request's answer because what this process held did not cover them
    # (``leases=True`` only): each user's first calls, and afterwards calls that found the slice run dry (growing
    # steadily far from a cap: the slices are too small for the calls' pace).
    lease_waits: int | None = None


@dataclass(frozen=True, slots=True)
class StartResult:
    """What ``start()`` found: the service answers, and it accepts the key (False also when it could not be asked)."""

    healthy: bool
    authenticated: bool


@dataclass(frozen=True, slots=True)
class Rate:
    input: float
    output: float


LimitMetric = Literal["spend", "tokens", "requests"]
"""A window's metric: dollars at the plan's prices, input plus output tokens, or metered calls."""
LimitWindow = Literal["minute", "hour", "day", "week", "month", "period", "rolling"]
"""Calendar windows reset in the plan's ``time_zone`` (weeks start on Monday); ``period`` is the billing
period; ``rolling`` the last ``duration_minutes``."""


@dataclass(frozen=True, slots=True)
class PlanLimit:
    """One entry of a plan's ``limits``: a cap on one metric over one window, named in gates ``limit:<name>``."""

    name: str
    metric: LimitMetric
    max: float
    """Dollars for spend; a whole number of tokens or requests. 0 blocks every call."""
    window: LimitWindow
    duration_minutes: int | None = None
    """Rolling windows only: their length in minutes (1-44,640)."""
    model: str | None = None
    """Count only calls of this normalized model; None: every call."""
    soft_gate_at: float | None = None
    """This limit's own marks; None: the plan's."""
    hard_gate_at: float | None = None
    scope: str | None = None
    """In a team plan: ``team`` (default) caps the sum over the members, ``member`` each member apart."""

    @staticmethod
    def parse(raw: dict[str, Any]) -> PlanLimit:
        def opt(k: str) -> float | None:
            v = raw.get(k)
            return None if v is None else float(v)

        d = raw.get("duration_minutes")
        return PlanLimit(
            name=str(raw["name"]),
            metric=raw["metric"],
            max=float(raw["max"]),
            window=raw["window"],
            duration_minutes=None if d is None else int(d),
            model=raw.get("model"),
            soft_gate_at=opt("soft_gate_at"),
            hard_gate_at=opt("hard_gate_at"),
            scope=raw.get("scope"),
        )


@dataclass(frozen=True, slots=True)
class LimitBucket:
    """One bucket of a rolling window in a session view: its start (ISO 8601) and what it counted."""

    start: str
    used: float
    """Dollars for spend, else tokens or requests."""


@dataclass(frozen=True, slots=True)
class LimitStatus:
    """One dimension of a user as the service reports it (the session view's ``limits``, and
    GET /users/{user_id}/limits): SPEC's caps and each entry of the plan's ``limits``."""

    reason: str
    """``total_spend``, ``session_spend``, ``model_limit:<model>`` or ``limit:<name>``."""
    name: str | None
    metric: LimitMetric
    window: str
    """A LimitWindow, or ``session``."""
    duration_minutes: int | None
    model: str | None
    scope: str
    max: float
    used: float
    pct: float
    soft_gate_at: float
    hard_gate_at: float
    window_start: str | None
    """Start of the window counted; None for rolling windows and the session."""
    resets_at: str | None
    """When it lifts by itself; None: never (max 0), nothing counted in a rolling window, or the session."""
    buckets: tuple[LimitBucket, ...] | None = None
    """Rolling windows: their buckets."""
    credits: LimitCredits | None = None
    """``total_spend`` with credits enabled (its max then includes the balance): the balance and the plan's low
    mark."""

    @staticmethod
    def parse(raw: dict[str, Any]) -> LimitStatus:
        buckets = raw.get("buckets")
        credits = raw.get("credits")

        def num(v: Any) -> float | None:
            return None if v is None else float(v)

        d = raw.get("duration_minutes")
        return LimitStatus(
            reason=str(raw["reason"]),
            name=raw.get("name"),
            metric=raw["metric"],
            window=str(raw["window"]),
            duration_minutes=None if d is None else int(d),
            model=raw.get("model"),
            scope=str(raw.get("scope", "user")),
            max=float(raw["max"]),
            used=float(raw.get("used") or 0),
            pct=float(raw.get("pct") or 0),
            soft_gate_at=float(raw.get("soft_gate_at") or 0),
            hard_gate_at=float(raw.get("hard_gate_at") or 0),
            window_start=raw.get("window_start"),
            resets_at=raw.get("resets_at"),
            buckets=None if buckets is None else tuple(LimitBucket(str(b["start"]), float(b["used"])) for b in buckets),
            credits=None
            if not isinstance(credits, dict)
            else LimitCredits(float(credits.get("balance") or 0), num(credits.get("low_at"))),
        )


@dataclass(frozen=True, slots=True)
class PlanConfig:
    max_spend_per_period: float | None = None
    max_spend_per_session: float | None = None
    soft_gate_at: float = 0.8
    hard_gate_at: float = 1.0
    model_limits: dict[str, int] = field(default_factory=dict)
    """max_tokens_per_period by model."""
    cost_rates: dict[str, Rate] = field(default_factory=dict)
    session_timeout_minutes: float = 30.0
    default_cost_rate: Rate | None = None
    tool_costs: dict[str, float] = field(default_factory=dict)
    default_tool_cost: float = 0.02
    pre_call_estimate: bool = False
    pre_call_buffer_tokens: int = 4096
    limits: tuple[PlanLimit, ...] = ()
    """The plan's windows (BUDGETS.md section 2), in plan order."""
    time_zone: str = "UTC"
    """IANA name: calendar windows reset at midnight there."""
    credits_enabled: bool = False
    """Prepaid credits extend the period cap (absent from services before credits: off)."""
    credits_low_at: float | None = None
    """The balance below which on_credits_low fires; None: never."""
    prepaid: bool = False
    """Set by the library when the period cap is prepaid credits with no allowance: a new period lifts nothing (only
    a grant does), so ``total_spend`` has no ``resets_at``."""

    @staticmethod
    def parse(raw: dict[str, Any]) -> PlanConfig:
        """From the session view's plan_config: an unlimited cap may be omitted or null."""

        def rate(v: Any) -> Rate | None:
            if not isinstance(v, dict):
                return None
            return Rate(float(v.get("input", 0) or 0), float(v.get("output", 0) or 0))

        def num(v: Any) -> float | None:
            return None if v is None else float(v)

        limits: dict[str, int] = {}
        for k, v in (raw.get("model_limits") or {}).items():
            cap = v.get("max_tokens_per_period") if isinstance(v, dict) else v
            if cap is not None:
                limits[k] = int(cap)
        rates: dict[str, Rate] = {}
        for k, v in (raw.get("cost_rates") or {}).items():
            r = rate(v)
            if r is not None:
                rates[k] = r
        return PlanConfig(
            max_spend_per_period=num(raw.get("max_spend_per_period")),
            max_spend_per_session=num(raw.get("max_spend_per_session")),
            soft_gate_at=float(raw.get("soft_gate_at", 0.8) if raw.get("soft_gate_at") is not None else 0.8),
            hard_gate_at=float(raw.get("hard_gate_at", 1.0) if raw.get("hard_gate_at") is not None else 1.0),
            model_limits=limits,
            cost_rates=rates,
            session_timeout_minutes=float(raw.get("session_timeout_minutes") or 30.0),
            default_cost_rate=rate(raw.get("default_cost_rate")),
            tool_costs={k: float(v) for k, v in (raw.get("tool_costs") or {}).items() if v is not None},
            default_tool_cost=float(raw["default_tool_cost"] if raw.get("default_tool_cost") is not None else 0.02),
            pre_call_estimate=bool(raw.get("pre_call_estimate", False)),
            pre_call_buffer_tokens=int(
                raw["pre_call_buffer_tokens"] if raw.get("pre_call_buffer_tokens") is not None else 4096
            ),
            limits=tuple(PlanLimit.parse(v) for v in (raw.get("limits") or [])),
            time_zone=str(raw.get("time_zone") or "UTC"),
            credits_enabled=bool(raw.get("credits_enabled", False)),
            credits_low_at=num(raw.get("credits_low_at")),
        )
