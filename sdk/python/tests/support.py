"""Helpers of the tests: the real stack's REST API as a product uses it, and a fault-injecting proxy."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx

from meterline import LimitExceededError, Meter
from meterline.transport import tls_context

REPO = Path(__file__).resolve().parents[3]
RULES = REPO / "rules" / "cases.json"
DAY = timedelta(days=1)


def serve(server: http.server.HTTPServer) -> None:
    """Serves ``server`` in a daemon thread. shutdown() waits for the loop's next poll: at the default half second, a
    test's servers closed in teardown added seconds to the run."""
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()


def api_url() -> str:
    url = os.environ.get("METER_TEST_API_URL")
    if not url:
        raise RuntimeError("METER_TEST_API_URL is not set: run these tests through `npm test -- sdk/python`")
    return url


class Api:
    """The REST API with a product's key."""

    def __init__(self, base: str, key: str | None = None) -> None:
        self.base = base
        self.key = key
        headers = {"authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(base_url=base, headers=headers, timeout=30, verify=tls_context())

    def get(self, path: str) -> httpx.Response:
        return self.client.get(path)

    def post(self, path: str, body: Any = None) -> httpx.Response:
        return self.client.post(path, json=body)

    def patch(self, path: str, body: Any) -> httpx.Response:
        return self.client.patch(path, json=body)


@dataclass
class Product:
    api: Api
    key: str
    url: str
    plans: dict[str, str] = field(default_factory=dict)

    def create_plan(self, **plan: Any) -> str:
        res = self.api.post("/config/plans", {"plans": [{"name": f"p-{uuid.uuid4()}", **plan}]})
        assert res.status_code == 201, res.text
        plan_id: str = res.json()["plans"][0]["id"]
        return plan_id

    def create_user(
        self, plan: dict[str, Any] | None = None, start: datetime | None = None, end: datetime | None = None
    ) -> str:
        user_id = f"u-{uuid.uuid4()}"
        res = self.api.post("/users", {"external_user_id": user_id})
        assert res.status_code == 201, res.text
        if plan is not None:
            now = datetime.now(timezone.utc)
            self.subscribe(user_id, self.create_plan(**plan), start or now - DAY, end or now + 20 * DAY)
        return user_id

    def subscribe(self, user_id: str, plan_id: str, start: datetime, end: datetime) -> None:
        res = self.api.post(
            f"/users/{user_id}/subscription",
            {"plan_id": plan_id, "period_start": start.isoformat(), "period_end": end.isoformat()},
        )
        assert res.status_code == 200, res.text

    def usage(self, user_id: str) -> dict[str, Any]:
        res = self.api.get(f"/users/{user_id}/usage")
        assert res.status_code == 200, res.text
        body: dict[str, Any] = res.json()
        return body

    def gate_events(self, user_id: str) -> list[dict[str, Any]]:
        res = self.api.get(f"/users/{user_id}/gate-events")
        assert res.status_code == 200, res.text
        events: list[dict[str, Any]] = res.json()["events"]
        return events


def create_team(product: Product, plan: dict[str, Any], members: list[str]) -> str:
    return create_team_on_plan(product, product.create_plan(**plan), members)


def create_team_on_plan(product: Product, plan_id: str, members: list[str]) -> str:
    """A team subscribed to the plan ``plan_id`` (to change it), with ``members`` joined."""
    team_id = f"t-{uuid.uuid4()}"
    res = product.api.post("/teams", {"external_team_id": team_id, "name": "Acme"})
    assert res.status_code == 201, res.text
    now = datetime.now(timezone.utc)
    res = product.api.post(
        f"/teams/{team_id}/subscription",
        {
            "plan_id": plan_id,
            "period_start": (now - DAY).isoformat(),
            "period_end": (now + 20 * DAY).isoformat(),
        },
    )
    assert res.status_code == 200, res.text
    for user_id in members:
        res = product.api.client.put(f"/users/{user_id}/team", json={"team_id": team_id})
        assert res.status_code == 200, res.text
    return team_id


def new_product(base: str) -> Product:
    res = Api(base).post("/products", {"name": "Python client tests"})
    assert res.status_code == 201, res.text
    key = res.json()["api_key"]
    return Product(Api(base, key), key, base)


def eventually(check: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    """Polls until ``check`` returns a truthy value (or stops raising AssertionError)."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            v = check()
            if v:
                return v
        except AssertionError as err:
            last = err
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}: {last}")


def near(a: float, b: float) -> bool:
    return abs(a - b) < 1e-9


def straddle_a_period(
    m: Meter, user: str, end: float, probe: Callable[[], dict[str, Any]]
) -> tuple[int, LimitExceededError]:
    """A $1.00 call of ``user`` reserved before ``end`` (a period's end, epoch seconds) and committed after the next
    period's first call; ``probe`` (another holder) takes most of the new period's cap before that call and after
    the commit, so that the calls that follow run out of their slice. How many calls ran in the new period (the
    straddling one included) and the LimitExceededError that ended them."""
    from meterline import LimitExceededError

    straddling = m.reserve(user, model="m", input_tokens=0)  # $1.00 estimated
    assert time.time() < end, "reserved in the first period"
    while time.time() < end + 0.2:
        time.sleep(0.05)
    assert probe()["added"] > 0
    m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)  # $1.00
    # The straddling call ends now: its event counts in the new period, its estimate goes back to the last one's.
    straddling.commit(output_tokens=100)
    for _ in range(4):
        probe()
    calls = 2
    for _ in range(100):
        try:
            m.reserve(user, model="m", input_tokens=0).commit(output_tokens=100)
        except LimitExceededError as err:
            return calls, err
        calls += 1
    raise AssertionError("100 calls ran without a refusal")


def rules() -> dict[str, Any]:
    table: dict[str, Any] = json.loads(RULES.read_text())
    return table


@dataclass
class Fault:
    match: re.Pattern[str]
    kind: str  # "status" | "lose"
    status: int = 500
    times: int = 1
    # The answer's JSON for "status" (default: {"detail": "injected fault"}).
    body: Any = None


class FaultProxy:
    """In front of the real gateway: answers an injected status, forwards and then cuts the connection
    before the answer (a lost answer), or stops listening (refused connections). Counts requests."""

    def __init__(self, target_api_url: str) -> None:
        self.target = target_api_url.rstrip("/")
        self.prefix = httpx.URL(self.target).path
        self.faults: list[Fault] = []
        self.seen: list[str] = []
        self.answered: list[str] = []
        self.bodies: list[tuple[str, bytes]] = []
        # Requests answered in full: their key, body and the gateway's answer.
        self.exchanged: list[tuple[str, bytes, bytes]] = []
        self.conns: set[Any] = set()
        # Requests matching this pattern wait until release() (a slow service).
        self.hold_pattern: re.Pattern[str] | None = None
        self.held = threading.Event()
        self.holding = 0
        self.lock = threading.Lock()
        self.upstream = httpx.Client(timeout=30, verify=tls_context())
        self.port = 0
        self.server: http.server.ThreadingHTTPServer | None = None
        self.up()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    def inject(self, pattern: str, kind: str, status: int = 500, times: int = 1, body: Any = None) -> None:
        with self.lock:
            self.faults.append(Fault(re.compile(pattern), kind, status, times, body))

    def count(self, pattern: str) -> int:
        rx = re.compile(pattern)
        with self.lock:
            return sum(1 for s in self.seen if rx.search(s))

    def count_answered(self, pattern: str) -> int:
        """Requests whose answer was sent back to the client."""
        rx = re.compile(pattern)
        with self.lock:
            return sum(1 for s in self.answered if rx.search(s))

    def hold(self, pattern: str) -> None:
        self.held.clear()
        self.hold_pattern = re.compile(pattern)

    def release(self) -> None:
        self.hold_pattern = None
        self.held.set()

    def sent(self, pattern: str) -> list[Any]:
        """The JSON bodies of the requests whose "METHOD /path" matches."""
        rx = re.compile(pattern)
        with self.lock:
            return [json.loads(b) for k, b in self.bodies if rx.search(k) and b]

    def exchanges(self, pattern: str) -> list[tuple[Any, Any]]:
        """The JSON body and JSON answer of the requests answered in full whose "METHOD /path" matches."""
        rx = re.compile(pattern)
        with self.lock:
            return [(json.loads(b or b"null"), json.loads(a or b"null")) for k, b, a in self.exchanged if rx.search(k)]

    def up(self) -> None:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                with proxy.lock:
                    proxy.conns.add(self.connection)

            def finish(self) -> None:
                with proxy.lock:
                    proxy.conns.discard(self.connection)
                with contextlib.suppress(OSError):
                    super().finish()

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                key = f"{self.command} {self.path[len(proxy.prefix) :]}"
                fault = None
                with proxy.lock:
                    proxy.seen.append(key)
                    proxy.bodies.append((key, body))
                    for f in proxy.faults:
                        if f.match.search(key):
                            fault = f
                            f.times -= 1
                            if f.times <= 0:
                                proxy.faults.remove(f)
                            break
                if fault is not None and fault.kind == "status":
                    data = json.dumps(fault.body if fault.body is not None else {"detail": "injected fault"}).encode()
                    self.send_response(fault.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                hold = proxy.hold_pattern
                if hold is not None and hold.search(key):
                    with proxy.lock:
                        proxy.holding += 1
                    proxy.held.wait(60)
                    with proxy.lock:
                        proxy.holding -= 1
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                up = proxy.upstream.request(
                    self.command,
                    proxy.target[: len(proxy.target) - len(proxy.prefix)] + self.path,
                    content=body,
                    headers=headers,
                )
                if fault is not None and fault.kind == "lose":
                    # The gateway handled it; the answer never reaches the client.
                    self.close_connection = True
                    return
                self.send_response(up.status_code)
                for k, v in up.headers.items():
                    if k.lower() in ("content-type", "retry-after"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(up.content)))
                self.end_headers()
                self.wfile.write(up.content)
                with proxy.lock:
                    proxy.answered.append(key)
                    proxy.exchanged.append((key, body, up.content))

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                # A held request answered after its client gave up (its timeout, its exit), or after the proxy
                # closed: nothing to report.
                if proxy.server is not self or isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    return
                super().handle_error(request, client_address)

        server = Server(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self.server = server
        serve(server)

    def down(self) -> None:
        """Stops listening: connections are refused until up()."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        with self.lock:
            conns = list(self.conns)
        # Kept-alive connections too: a service that is down answers nothing.
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.down()
        self.upstream.close()
