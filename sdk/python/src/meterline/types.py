"""Records of the public API. Those that mirror the service's keep its snake_case field names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

GateStatus = Literal["ok", "soft_gate", "hard_gate"]


@dataclass(frozen=True, slots=True)
class GuardResult:
    status: GateStatus
    """``total_spend``, ``session_spend`` or ``model_limit:<model>``; None when ok."""
    gate_reason: str | None
    usage_pct: float
    current_value: float
    limit_value: float
    message: str | None


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
    """The budget lease the cost was spent from (``leases=True``)."""
    lease_id: str | None = None

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
    """None while the service does not know the user (or has not answered yet)."""
    service_user_id: str | None
    plan: str
    billing_period: BillingPeriod
    """The library's own session of the user (rotates after session_timeout_minutes)."""
    session_id: str
    period_cost: float
    session_cost: float
    period_tokens_by_model: dict[str, int]
    period_cost_by_model: dict[str, float]


@dataclass(frozen=True, slots=True)
class ManualEvent:
    id: str
    user_id: str
    cost: float
    model: str | None
    source: str
    created_at: str


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


@dataclass(frozen=True, slots=True)
class StartResult:
    """What ``start()`` found: the service answers, and it accepts the key (False also when it could not be asked)."""

    healthy: bool
    authenticated: bool


@dataclass(frozen=True, slots=True)
class Rate:
    input: float
    output: float


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
        )
