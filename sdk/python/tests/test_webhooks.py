"""verify_webhook against real deliveries of the running service: test events, gate events, a rotated
secret, a replayed old delivery and a tampered body."""

from __future__ import annotations

import http.server
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from meterline import LimitExceededError, Meter, WebhookVerificationError, verify_webhook

from .support import Product, eventually, serve

PRICED = {"cost_rates": {"m": {"input": 0, "output": 10}}}


class Receiver:
    def __init__(self) -> None:
        self.deliveries: list[tuple[bytes, dict[str, str]]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.deliveries.append((body, {k.lower(): v for k, v in self.headers.items()}))
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        serve(self.server)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def of_type(self, t: str) -> list[tuple[bytes, dict[str, str]]]:
        return [d for d in self.deliveries if d[1].get("x-service-event") == t]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


def endpoint(product: Product, url: str) -> tuple[str, str]:
    events = ["gate_event.soft_gate", "gate_event.hard_gate", "gate_event.blocked", "usage.threshold.80"]
    res = product.api.post("/webhooks/endpoints", {"url": url, "subscribed_events": events})
    assert res.status_code == 201, res.text
    body = res.json()
    return body["id"], body["secret"]


def test_real_test_deliveries_verify_and_forgeries_do_not(product: Product, receiver: Receiver) -> None:
    ep, secret = endpoint(product, receiver.url)
    assert product.api.post(f"/webhooks/endpoints/{ep}/test").json()["success"]
    body, headers = receiver.of_type("webhook.test")[0]
    env = verify_webhook(body, headers, secret)
    assert env["type"] == "webhook.test" and env["id"].startswith("whevt_")
    # Headers in any case, the body as str.
    assert verify_webhook(body.decode(), {k.title(): v for k, v in headers.items()}, secret)["id"] == env["id"]
    with pytest.raises(WebhookVerificationError) as err:
        verify_webhook(body.replace(b"webhook.test", b"webhook.tesT"), headers, secret)
    assert err.value.reason == "bad_signature"
    with pytest.raises(WebhookVerificationError) as err:
        verify_webhook(body, headers, "whsec_other")
    assert err.value.reason == "bad_signature"
    stamp = int(headers["x-service-timestamp"])
    with pytest.raises(WebhookVerificationError) as err:
        verify_webhook(body, headers, secret, now=stamp + 301)
    assert err.value.reason == "too_old"
    assert verify_webhook(body, headers, secret, tolerance_seconds=600, now=stamp + 301)["id"] == env["id"]
    without = {k: v for k, v in headers.items() if k != "x-service-signature"}
    with pytest.raises(WebhookVerificationError) as err:
        verify_webhook(body, without, secret)
    assert err.value.reason == "missing_header"
    with pytest.raises(WebhookVerificationError) as err:
        verify_webhook(body, {**headers, "x-service-timestamp": "soon"}, secret)
    assert err.value.reason == "malformed"
    # A signature that is not sha256=<64 hex digits> is malformed, said before any comparison: non-ASCII characters
    # made hmac.compare_digest raise TypeError, and "²" passed str.isdigit() to fail int().
    good = headers["x-service-signature"]
    for forged in ("sha256=" + "é" * 64, "sha256=é", "sha256=" + "g" * 64, good[:-1], good + "0", "sha1=" + good[7:]):
        with pytest.raises(WebhookVerificationError) as err:
            verify_webhook(body, {**headers, "x-service-signature": forged}, secret)
        assert err.value.reason == "malformed", forged
    with pytest.raises(WebhookVerificationError) as err:
        verify_webhook(body, {**headers, "x-service-timestamp": "²"}, secret)
    assert err.value.reason == "malformed"
    # Upper-case hex and surrounding spaces are the same signature.
    assert verify_webhook(body, {**headers, "x-service-signature": f" sha256={good[7:].upper()} "}, secret)
    # Mistakes at the call site are said as they are: an unset secret variable, a body a framework parsed.
    with pytest.raises(TypeError, match="signing secret"):
        verify_webhook(body, headers, os.environ.get("NO_SUCH_VARIABLE"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="exactly as received"):
        verify_webhook(json.loads(body), headers, secret)


def test_a_rotated_secret_verifies_with_the_list_of_both(product: Product, receiver: Receiver) -> None:
    ep, old = endpoint(product, receiver.url)
    res = product.api.post(f"/webhooks/endpoints/{ep}/rotate-secret")
    assert res.status_code == 200, res.text
    new = res.json()["secret"]
    assert product.api.post(f"/webhooks/endpoints/{ep}/test").json()["success"]
    body, headers = receiver.of_type("webhook.test")[-1]
    assert verify_webhook(body, headers, [old, new])["type"] == "webhook.test"
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body, headers, old)


def test_soft_hard_and_blocked_gates_arrive_as_three_verified_webhooks(product: Product, receiver: Receiver) -> None:
    _, secret = endpoint(product, receiver.url)
    user = product.create_user({"max_spend_per_period": 1, **PRICED})
    warn = Meter(api_key=product.key, base_url=product.url, blocking=False)
    block = Meter(api_key=product.key, base_url=product.url)
    warn.record(user, model="m", output_tokens=85)
    assert warn.guard(user).status == "soft_gate"
    warn.record(user, model="m", output_tokens=15)
    assert warn.guard(user).status == "hard_gate"
    assert warn.flush()  # the other process learns the spend from the service
    with pytest.raises(LimitExceededError):
        block.guard(user)
    assert block.flush()
    want = {"gate_event.soft_gate", "gate_event.hard_gate", "gate_event.blocked"}
    eventually(lambda: want <= {d[1].get("x-service-event") for d in receiver.deliveries}, 30, "gate webhooks")
    for t in want:
        body, headers = receiver.of_type(t)[0]
        env = verify_webhook(body, headers, secret, now=time.time())
        assert env["data"]["user_id"] == user
    warn.shutdown()
    block.shutdown()
