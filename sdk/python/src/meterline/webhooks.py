"""Verifying the service's webhook deliveries: ``X-Service-Signature`` is ``sha256=<hex>`` of
HMAC-SHA256 over ``<X-Service-Timestamp>.<raw body>``, keyed with the endpoint's signing secret
(the ``whsec_...`` string's UTF-8 bytes)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

from .errors import MeterTypeError, WebhookVerificationError


class GatePayload(TypedDict):
    user_id: str
    status: str
    gate_reason: str
    usage_pct: float
    current_value: float
    limit_value: float
    blocked: bool
    message: str | None


class ThresholdPayload(TypedDict):
    user_id: str
    threshold_pct: int
    current_spend: float
    spend_limit: float
    plan_name: str
    tokens_total: int
    cost_by_model: dict[str, float]


class SummaryPayload(TypedDict):
    summary_type: Literal["daily", "weekly", "monthly"]
    period_start: str
    period_end: str
    active_users: int
    total_cost: float
    total_tokens: int
    total_events: int
    soft_gates: int
    hard_gates: int
    top_users: list[dict[str, Any]]


class CreditsPayload(TypedDict, total=False):
    """credits.low, credits.depleted and credits.expired (grant_id and amount: the grant that expired), dollars.

    A user's balance names the user (``user_id``); a team's shared pool names the team
    (``team_id``, its external id) instead: check which before granting.
    """

    user_id: str
    team_id: str
    balance: float
    low_at: float | None
    grant_id: str
    amount: float


class WebhookEnvelope(TypedDict):
    id: str
    type: str
    api_version: str
    created_at: str
    product_id: str
    data: Any


_SIGNATURE = re.compile(r"sha256=([0-9a-fA-F]{64})")
_TIMESTAMP = re.compile(r"[0-9]{1,12}")


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    for k, v in headers.items():
        if k.lower() == name:
            if isinstance(v, (list, tuple)):
                v = v[0] if v else None
            return None if v is None else str(v)
    return None


def verify_webhook(
    raw_body: bytes | str,
    headers: Mapping[str, Any],
    secret: str | Sequence[str],
    tolerance_seconds: float = 300,
    now: float | None = None,
) -> WebhookEnvelope:
    """The parsed envelope of a genuine delivery, else WebhookVerificationError with ``reason``
    ``missing_header``, ``bad_signature``, ``too_old`` or ``malformed``. ``secret`` may be a list (during a
    rotation). A timestamp more than ``tolerance_seconds`` from now, either way, is refused as too old."""
    # Mistakes at the call site, said before any header: an unset secret variable, a body parsed by the framework.
    if secret is None or not isinstance(secret, (str, list, tuple)):
        raise MeterTypeError(
            "verify_webhook needs the endpoint's signing secret (a string, or a list during a rotation): is its "
            "variable set?"
        )
    if not isinstance(raw_body, (str, bytes, bytearray, memoryview)):
        raise MeterTypeError(
            "verify_webhook needs the body exactly as received (str or bytes), not parsed JSON: e.g. "
            "await request.body() in FastAPI, request.get_data() in Flask"
        )
    body = raw_body.encode() if isinstance(raw_body, str) else bytes(raw_body)
    signature = _header(headers, "x-service-signature")
    stamp = _header(headers, "x-service-timestamp")
    if not signature or not stamp:
        missing = "X-Service-Signature" if not signature else "X-Service-Timestamp"
        raise WebhookVerificationError("missing_header", f"webhook has no {missing} header")
    # The form is checked before any comparison: hmac.compare_digest raises TypeError for a str that is not ASCII,
    # and str.isdigit() takes digits int() does not ("²"). As the TypeScript client's.
    sig = _SIGNATURE.fullmatch(signature.strip())
    if sig is None:
        raise WebhookVerificationError("malformed", "X-Service-Signature is not sha256=<64 hex digits>")
    if _TIMESTAMP.fullmatch(stamp.strip()) is None:
        raise WebhookVerificationError("malformed", "X-Service-Timestamp is not Unix seconds")
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets or not all(isinstance(s, str) and s for s in secrets):
        raise MeterTypeError("secret must be a non-empty string or a list of them")
    given = sig.group(1).lower()
    signed = stamp.strip().encode() + b"." + body
    if not any(hmac.compare_digest(hmac.new(s.encode(), signed, hashlib.sha256).hexdigest(), given) for s in secrets):
        raise WebhookVerificationError("bad_signature", "webhook signature does not match the body and secret")
    age = (time.time() if now is None else now) - int(stamp)
    if abs(age) > tolerance_seconds:
        raise WebhookVerificationError(
            "too_old", f"webhook timestamp is {abs(age):.0f} s from now (accepted: {tolerance_seconds:g} s)"
        )
    try:
        envelope = json.loads(body)
    except ValueError as err:
        raise WebhookVerificationError("malformed", "webhook body is not JSON") from err
    if not isinstance(envelope, dict) or not isinstance(envelope.get("type"), str) or "data" not in envelope:
        raise WebhookVerificationError("malformed", "webhook body is not an event envelope")
    result: WebhookEnvelope = envelope  # type: ignore[assignment]
    return result
