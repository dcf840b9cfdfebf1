"""portal_token(): a token for one user's browser, minted with the product's key (Meter, and AsyncMeter awaited)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from meterline import AsyncMeter, Meter, MeterAPIError, PortalToken

from .support import Api, Product


def _lifetime(t: PortalToken) -> float:
    return (datetime.fromisoformat(t.expires_at.replace("Z", "+00:00")) - datetime.now(timezone.utc)).total_seconds()


def test_portal_token_reads_the_users_own_state(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 5})
    m = Meter(api_key=product.key, base_url=product.url)
    try:
        t = m.portal_token(user, ttl_seconds=120)
        assert isinstance(t, PortalToken) and t.user_id == user and t.token.startswith("mpt_")
        assert 100 < _lifetime(t) <= 120
        assert 3_580 < _lifetime(m.portal_token(user)) <= 3_600
        me = Api(product.url, t.token).get("/portal/me")
        assert me.status_code == 200, me.text
        assert me.json()["user_id"] == user and me.json()["limits"][0]["max"] == 5
        # The token reads /portal/me only.
        assert Api(product.url, t.token).get(f"/users/{user}/session").status_code == 401
        for bad in (59, 86_401, 1.5):
            with pytest.raises(TypeError):
                m.portal_token(user, ttl_seconds=bad)  # type: ignore[arg-type]
        with pytest.raises(MeterAPIError) as missing:
            m.portal_token("nobody-here")
        assert missing.value.status == 404
    finally:
        m.shutdown()


async def test_async_portal_token(product: Product) -> None:
    user = product.create_user()
    m = AsyncMeter(api_key=product.key, base_url=product.url)
    try:
        t = await m.portal_token(user, ttl_seconds=600)
        assert t.user_id == user and 580 < _lifetime(t) <= 600
        assert Api(product.url, t.token).get("/portal/me").json()["plan"] == "none"
    finally:
        await m.shutdown()


async def test_meter_aportal_token(product: Product) -> None:
    user = product.create_user()
    m = Meter(api_key=product.key, base_url=product.url)
    try:
        assert (await m.aportal_token(user, ttl_seconds=60)).user_id == user
    finally:
        m.shutdown()
