"""Client library of the Meter usage-limit service."""

from .async_meter import AsyncMeter
from .context import current_session, current_user
from .errors import (
    LimitExceededError,
    MeterAPIError,
    MeterAuthenticationError,
    MeterError,
    MeterEventsDroppedError,
    MeterNetworkError,
    MeterUnavailableError,
    MissingUserError,
    WebhookVerificationError,
)
from .limit_response import limit_body, limit_of, retry_after_seconds
from .meter import Meter
from .reservation import Reservation
from .transport import VERSION
from .types import (
    BillingPeriod,
    CreditBalance,
    CreditsEvent,
    GateContext,
    GuardResult,
    LimitBucket,
    LimitCredits,
    LimitMetric,
    LimitStatus,
    LimitWindow,
    ManualEvent,
    MeterStats,
    PlanLimit,
    PortalToken,
    SessionStartState,
    StartResult,
    TeamState,
    UsageEvent,
    UserState,
)
from .webhooks import WebhookEnvelope, verify_webhook

__version__ = VERSION

__all__ = [
    "VERSION",
    "AsyncMeter",
    "BillingPeriod",
    "CreditBalance",
    "CreditsEvent",
    "GateContext",
    "GuardResult",
    "LimitBucket",
    "LimitCredits",
    "LimitExceededError",
    "LimitMetric",
    "LimitStatus",
    "LimitWindow",
    "ManualEvent",
    "Meter",
    "MeterAPIError",
    "MeterAuthenticationError",
    "MeterError",
    "MeterEventsDroppedError",
    "MeterNetworkError",
    "MeterStats",
    "MeterUnavailableError",
    "MissingUserError",
    "PlanLimit",
    "PortalToken",
    "Reservation",
    "SessionStartState",
    "StartResult",
    "TeamState",
    "UsageEvent",
    "UserState",
    "WebhookEnvelope",
    "WebhookVerificationError",
    "current_session",
    "current_user",
    "limit_body",
    "limit_of",
    "retry_after_seconds",
    "verify_webhook",
]
