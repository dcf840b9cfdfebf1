"""start() and the mistakes of configuration the client explains: a refused key, a dead port, a base_url that is
not the API, against the real stack over HTTP."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from meterline import (
    Meter,
    MeterAPIError,
    MeterAuthenticationError,
    MeterEventsDroppedError,
    MeterUnavailableError,
    StartResult,
)

from .support import Product
from .test_meter import PRICED, meter_for


def test_start_checks_health_and_the_key(product: Product, caplog: pytest.LogCaptureFixture) -> None:
    m = meter_for(product)
    r = m.start()
    assert r.healthy and r.authenticated is True
    m.shutdown()
    errors: list[BaseException] = []
    bad = Meter(api_key="mk_wrong", base_url=product.url, on_error=errors.append)
    with caplog.at_level(logging.ERROR, logger="meterline"):
        r = bad.start()
    assert r.healthy and r.authenticated is False
    assert any("refused the API key" in rec.getMessage() for rec in caplog.records)
    assert isinstance(errors[0], MeterAPIError) and errors[0].status == 401
    bad.shutdown()


def test_a_dead_port_is_said_to_refuse_the_connection_not_to_time_out(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as s:  # a port that was just free: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = Meter(api_key="k", base_url=f"http://127.0.0.1:{port}/api/v1")
    with caplog.at_level(logging.WARNING, logger="meterline"):
        assert m.start() == StartResult(healthy=False, authenticated=False)
    said = [rec.getMessage() for rec in caplog.records]
    assert any(
        f"connection refused at http://127.0.0.1:{port}/api/v1/health: is the service running" in x for x in said
    ), said
    assert not any("within" in x for x in said), said
    m.shutdown(timeout=0.5)


def test_a_base_url_ending_in_v1_asks_did_you_mean_api_v1(product: Product, caplog: pytest.LogCaptureFixture) -> None:
    root = product.url[: -len("/api/v1")]
    m = Meter(api_key=product.key, base_url=f"{root}/v1")  # the OpenAI habit
    with caplog.at_level(logging.ERROR, logger="meterline"):
        assert m.start() == StartResult(healthy=False, authenticated=False)
    said = [rec.getMessage() for rec in caplog.records]
    assert any(f"did you mean {root}/api/v1? The API answers there" in x for x in said), said
    # Deliveries, for a client that never called start(), say the same.
    caplog.clear()
    n = Meter(api_key=product.key, base_url=f"{root}/v1")
    with caplog.at_level(logging.ERROR, logger="meterline"):
        n.record("u-anyone", input_tokens=1)
        assert n.flush(timeout=3) is False
    assert any(f"did you mean {root}/api/v1?" in rec.getMessage() for rec in caplog.records), caplog.records
    for x in (m, n):
        x.shutdown(timeout=0.5)


def test_a_refused_key_is_not_held_silently(product: Product, caplog: pytest.LogCaptureFixture) -> None:
    user = product.create_user({"max_spend_per_period": 100, **PRICED})
    errors: list[BaseException] = []
    m = Meter(api_key="mk_wrong", base_url=product.url, on_error=errors.append)
    with caplog.at_level(logging.WARNING, logger="meterline"):
        m.record(user, model="gpt-4o", input_tokens=10)
        assert any("refused the API key" in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)
        assert isinstance(errors[0], MeterAuthenticationError) and errors[0].status == 401
        started = time.monotonic()
        with pytest.raises(MeterAuthenticationError) as err:
            m.flush(timeout=600)
        assert time.monotonic() - started < 60, "it does not wait out the timeout (ten minutes)"
        assert err.value.status == 401 and "1 events not delivered" in str(err.value)
        assert isinstance(err.value, MeterAPIError)
        s = m.stats
        assert (s.queued, s.held, s.key_refused) == (1, 1, True)
        caplog.clear()
        assert m.shutdown(timeout=1) is False  # never raises
    assert any("could not be delivered (the API key is refused)" in r.getMessage() for r in caplog.records)
    lost = errors[-1]
    assert isinstance(lost, MeterEventsDroppedError) and (lost.reason, lost.count) == ("undelivered", 1)


def test_a_base_url_without_the_api_path_is_explained() -> None:
    with pytest.raises(ValueError, match="/api/v1"):
        Meter(api_key="k", base_url="http://127.0.0.1:1")
    with pytest.raises(ValueError, match="api_key"):
        Meter(api_key="", base_url="http://127.0.0.1:1/api/v1")


def test_start_explains_a_base_url_that_is_not_the_api(product: Product, caplog: pytest.LogCaptureFixture) -> None:
    root = product.url[: -len("/api/v1")]
    m = Meter(api_key=product.key, base_url=f"{root}/api")
    with caplog.at_level(logging.ERROR, logger="meterline"):
        r = m.start()
    assert not r.healthy and not r.authenticated
    said = [rec.getMessage() for rec in caplog.records]
    assert any(f"nothing of the Meter API answers at {root}/api" in x and "including /api/v1" in x for x in said), said
    # Its user's session answered 404 too: the same mistake, not an unregistered user; said as an error, and the
    # event kept.
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="meterline"):
        m.record("u-anyone", input_tokens=1)
        assert m.flush(timeout=3) is False
    assert m.stats.queued == 1 and m.stats.rejected == 0
    said = [rec.getMessage() for rec in caplog.records]
    assert any("/session answered 404 and nothing of the Meter API answers" in x for x in said), said
    m.shutdown(timeout=0.5)


class _NotFound(BaseHTTPRequestHandler):
    """What a wrong host or an ingress without the route answers: 404 with a JSON detail, to anything."""

    def do_GET(self) -> None:
        body = b'{"detail":"Not Found"}'
        self.send_response(404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def foreign() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_404_to_every_path_is_a_wrong_address_not_unregistered_users(
    foreign: str, caplog: pytest.LogCaptureFixture
) -> None:
    closed = Meter(api_key="mk_any", base_url=f"{foreign}/api/v1", fail_closed=True, startup_timeout=2)
    with caplog.at_level(logging.ERROR, logger="meterline"), pytest.raises(MeterUnavailableError):
        closed.guard("anyone", model="gpt-4o")
    said = [rec.getMessage() for rec in caplog.records]
    assert len(said) == 1 and f"something answers at {foreign} but not the Meter API" in said[0], said
    caplog.clear()
    started = Meter(api_key="mk_any", base_url=f"{foreign}/api/v1")
    with caplog.at_level(logging.ERROR, logger="meterline"):
        assert started.start() == StartResult(healthy=False, authenticated=False)
    said = [rec.getMessage() for rec in caplog.records]
    assert any(f"something answers at {foreign} but not the Meter API" in x for x in said), said
    assert not any("None" in x for x in said), said
    for m in (closed, started):
        m.shutdown(timeout=0.2)
