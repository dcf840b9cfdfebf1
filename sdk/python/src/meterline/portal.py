"""Portal tokens: ``POST /users/{user_id}/portal-tokens``, a token that reads one user's state
(``GET /portal/me``, the ``<meter-usage>`` widget) and nothing else, for that user's browser."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from .errors import MeterTypeError
from .flow import Flow, Request
from .types import PortalToken
from .validate import check_user

TTL_MIN, TTL_MAX = 60, 86_400


def portal_token_flow(user_id: str, ttl_seconds: int | None = None) -> Flow[PortalToken]:
    check_user(user_id)
    if ttl_seconds is not None and (type(ttl_seconds) is not int or not TTL_MIN <= ttl_seconds <= TTL_MAX):
        raise MeterTypeError(f"ttl_seconds must be an integer of {TTL_MIN} to {TTL_MAX:,}")
    body: dict[str, Any] = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
    raw = yield Request("POST", f"/users/{quote(user_id, safe='')}/portal-tokens", body)
    return PortalToken(token=raw["token"], user_id=raw["user_id"], expires_at=raw["expires_at"])
