"""Errors of the client library. Every one derives from MeterError."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from .types import GuardResult, LimitCredits


class MeterError(Exception):
    """Base of every error the library raises."""


class MeterTypeError(MeterError, TypeError):
    """A wrong argument: a bug at the call site, raised where the call is made. A TypeError (as the library
    raised before) that is also a MeterError."""


class MeterValueError(MeterError, ValueError):
    """A wrong setting (a missing API key or URL, an option out of range) or a client wrapped twice: a ValueError
    that is also a MeterError."""


class MeterStateError(MeterError, RuntimeError):
    """A call the object's state does not allow (a reservation committed twice or after its release): a
    RuntimeError that is also a MeterError."""


class LimitExceededError(MeterError):
    """A hard gate while blocking. ``status_code`` 429 is what a web framework should answer."""

    status_code = 429

    def __init__(
        self, result: GuardResult, resets_at: datetime | None = None, credits: LimitCredits | None = None
    ) -> None:
        super().__init__(result.message or "usage limit reached")
        # Set when the prepaid credits are what ran out: the period cap (total_spend) blocked with credits enabled and
        # spend past the plan's allowance. The balance (0, or below 0 for an overdraft) and the plan's
        # credits_low_at, in dollars; None for any other block. It lifts when a grant tops the balance up.
        self.credits = credits
        self.result = result
        # The blocking dimension (result.gate_reason): total_spend, session_spend, model_limit:<model> or
        # limit:<name>; when several block at once, the one that lets a call through again last.
        self.reason: str | None = result.gate_reason
        # When the blocking dimension lets a call through again by itself (UTC; result.resets_at unless
        # given): the end of its window (a calendar window in the plan's time zone, the billing period, the
        # library's own session) or when enough of a rolling window's usage ages out; None when it never
        # does (a max of 0, prepaid credits with no allowance that ran out: only a grant lifts them) or is
        # not known (a caller-named session lasts as long as it is used).
        if resets_at is None and result.resets_at is not None:
            resets_at = datetime.fromisoformat(result.resets_at.replace("Z", "+00:00")).astimezone(timezone.utc)
        self.resets_at = resets_at


class MeterUnavailableError(LimitExceededError):
    """``fail_closed`` blocked a call because the user's session view could not be loaded (the metering
    service is unreachable, or refused the API key): an outage, not a limit. A LimitExceededError, so
    code that catches blocked calls still catches it, but ``status_code`` 503 and ``resets_at`` the
    library's next attempt to load the view: answer it 503 with ``Retry-After``."""

    status_code = 503


class MeterAPIError(MeterError):
    """The service answered other than 2xx; ``detail`` is its message."""

    def __init__(self, status: int, detail: str, retry_after: float | None = None) -> None:
        super().__init__(f"meter service answered {status}: {detail}")
        self.status = status
        self.detail = detail
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """408 (a proxy that gave up waiting: the request may not have reached the service), 429 and 5xx can
        succeed later; any other 4xx never will."""
        return self.status in (408, 429) or self.status >= 500


class MeterAuthenticationError(MeterAPIError):
    """The service refused the API key (401) or its scope (403). Until the key is fixed nothing is
    delivered: ``flush()`` raises it rather than returning False."""


class MeterEventsDroppedError(MeterError):
    """Events the library gave up on, passed to ``on_error`` (and logged) so that lost usage is never silent:
    ``reason`` "queue_full" when the queue was full and a new event was dropped (once per spell of a full queue, at
    its first drop; ``stats.dropped`` counts them all), "undelivered" when ``shutdown()`` ended with events it could
    not deliver (``count`` of them). A batch the service refuses reaches ``on_error`` as the MeterAPIError of the
    refusal instead."""

    def __init__(self, reason: Literal["queue_full", "undelivered"], count: int, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.count = count


class MeterNetworkError(MeterError):
    """The service did not answer (refused, reset, timed out). Always retryable."""

    retryable = True


class MissingUserError(MeterError):
    """A model-client integration was called with no user: neither ``user_id`` nor ``meter.user(...)``."""


class WebhookVerificationError(MeterError):
    """A webhook delivery failed verification; ``reason`` says why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
