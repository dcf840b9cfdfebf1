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
from .gates import evaluate
from .limit_response import limit_body, limit_of, retry_after_seconds
from .meter import Meter
from .pricing import Priced, normalize_model, price
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
    PlanConfig,
    PlanLimit,
    PortalToken,
    Rate,
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
    "PlanConfig",
    "PlanLimit",
    "PortalToken",
    "Priced",
    "Rate",
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
    "evaluate",
    "limit_body",
    "limit_of",
    "normalize_model",
    "price",
    "retry_after_seconds",
    "verify_webhook",
]
