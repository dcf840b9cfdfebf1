"""The REST API under /api/v1, over httpx: the steps of flow.py performed blocking (Transport) or awaited
(AsyncTransport)."""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import ssl
import time
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import httpx

from .errors import MeterAPIError, MeterAuthenticationError, MeterError, MeterNetworkError
from .flow import Flow, Health, Request, Sleep, Step, Stepper, Wait, wait_async, wait_blocking

T = TypeVar("T")

VERSION = "0.1.0"


_tls: tuple[int, ssl.SSLContext] | None = None


def tls_context() -> ssl.SSLContext:
    """The TLS context every client of this process shares, made as httpx makes its own (its CA bundle, or
    SSL_CERT_FILE / SSL_CERT_DIR as set when the first client is made). httpx makes one per client, even for an
    http:// base URL, and loading the CA bundle takes about 40 ms of CPU: a second Meter would pay it again. A
    forked child makes its own, as it makes its own pool: what the parent's threads held in it at the fork is not
    the child's to use."""
    global _tls
    pid = os.getpid()
    if _tls is None or _tls[0] != pid:
        _tls = (pid, httpx.create_ssl_context())
    return _tls[1]


class _Http:
    """What both transports share: the client's headers, a request's form, an answer's reading."""

    _client: httpx.Client | httpx.AsyncClient

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self.base = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        # False after a request found the service unreachable, until one succeeds.
        self.reachable = True
        # True once the Meter API itself answered here (a 2xx, or its /health): until then a 404 may be a wrong
        # address's (a proxy or another service answers 404 to every path), not "no such user".
        self.api_seen = False
        self.after_fork()

    def after_fork(self) -> None:
        """A new pool (also in a forked child: the parent's connections are not this process's to use)."""
        headers = {
            "authorization": f"Bearer {self.api_key}",
            "accept": "application/json",
            "user-agent": f"meterline-python/{VERSION}",
        }
        kind = httpx.AsyncClient if isinstance(self, AsyncTransport) else httpx.Client
        self._client = kind(headers=headers, timeout=self.timeout, verify=tls_context())

    def _build(self, client: httpx.Client | httpx.AsyncClient, step: Request | Health) -> httpx.Request:
        if isinstance(step, Health):
            return client.build_request("GET", f"{step.base or self.base}/health", timeout=step.timeout)
        content = None if step.body is None else json.dumps(step.body, separators=(",", ":")).encode()
        headers = {"content-type": "application/json"} if content is not None else None
        timeout = self.timeout if step.timeout is None else step.timeout
        return client.build_request(
            step.method, self.base + step.path, content=content, headers=headers, timeout=timeout
        )

    def _outcome(self, step: Request | Health, res: httpx.Response | BaseException) -> Any:
        """What a step met, for the flow: a health check's word; a request's parsed body (a 2xx), or its error
        (MeterAPIError, MeterAuthenticationError for 401/403, MeterNetworkError), returned to be thrown into it."""
        if isinstance(step, Health):
            word = health_failure(res) if isinstance(res, BaseException) else health_of(res)
            if step.base is None and word in ("ok", "degraded"):
                self.api_seen = True
            return word
        if isinstance(res, BaseException):
            self.reachable = False
            return MeterNetworkError(f"meter service unreachable: {_failure(res, self.base + step.path)}")
        self.reachable = res.status_code < 500
        parsed: Any = None
        if res.content:
            try:
                parsed = res.json()
            except ValueError:
                parsed = None
        if res.is_success:
            self.api_seen = True
        else:
            raw = parsed.get("detail") if isinstance(parsed, dict) else None
            detail = raw if isinstance(raw, str) else res.reason_phrase
            if res.status_code in (401, 403):
                return MeterAuthenticationError(res.status_code, detail)
            return MeterAPIError(res.status_code, detail, _retry_after(res.headers.get("retry-after")))
        return parsed


class Transport(_Http):
    """Over httpx.Client: each step blocks the calling thread."""

    _client: httpx.Client

    def close(self) -> None:
        self._client.close()

    def perform(self, step: Step) -> Any:
        """The step's outcome (an error is returned, not raised)."""
        if isinstance(step, Sleep):
            return time.sleep(step.seconds)
        if isinstance(step, Wait):
            return wait_blocking(step.handle, step.timeout)
        try:
            return self._outcome(step, self._client.send(self._build(self._client, step)))
        except (httpx.HTTPError, OSError) as err:
            return self._outcome(step, err)

    def run(self, flow: Flow[T]) -> T:
        s = Stepper(flow)
        try:
            while (step := s.next()) is not None:
                s.outcome = self.perform(step)
            return s.result
        finally:
            # A flow stopped mid-step (an exception, a cancelled task) runs its own finally blocks now,
            # not whenever it is collected: a delivery pass gives its claim back.
            flow.close()


class AsyncTransport(_Http):
    """Over httpx.AsyncClient: each step awaits on the running event loop (no thread)."""

    _client: httpx.AsyncClient

    async def run(self, flow: Flow[T]) -> T:
        s = Stepper(flow)
        try:
            while (step := s.next()) is not None:
                s.outcome = await self.perform(step)
            return s.result
        finally:
            flow.close()

    async def perform(self, step: Step) -> Any:
        if isinstance(step, Sleep):
            return await asyncio.sleep(step.seconds)
        if isinstance(step, Wait):
            return await wait_async(step.handle, step.timeout)
        request = self._build(self._client, step)
        try:
            return self._outcome(step, await self._client.send(request))
        except (httpx.HTTPError, OSError) as err:
            return self._outcome(step, err)


def health_of(res: httpx.Response) -> str:
    """What a /health answer says: "ok", "degraded" (answers, database unreachable), "not_found"
    (something answers there, but not the API's health route: a wrong address) or "unreachable" (a 5xx)."""
    try:
        body = res.json() if res.content else None
    except ValueError:
        body = None
    status = body.get("status") if isinstance(body, dict) else None
    if res.status_code == 404 or (res.is_success and not isinstance(status, str)):
        return "not_found"
    if not res.is_success:
        return "unreachable"
    return "ok" if status == "ok" else "degraded"


def health_failure(err: BaseException) -> str:
    """A /health request that got no answer: "refused" (nothing listens there), "timeout" (no answer in
    time) or "unreachable" (a reset, an unknown host)."""
    if _refused(err):
        return "refused"
    return "timeout" if isinstance(err, httpx.TimeoutException) else "unreachable"


def session_path(user_id: str) -> str:
    return f"/users/{quote(user_id, safe='')}/session"


def _refused(err: BaseException) -> bool:
    """Nothing listens at the address (ECONNREFUSED), as opposed to a service too slow to answer."""
    e: BaseException | None = err
    while e is not None:
        if isinstance(e, ConnectionRefusedError):
            return True
        e = e.__cause__ or e.__context__
    return isinstance(err, httpx.ConnectError) and "refused" in str(err).lower()


def _failure(err: BaseException, url: str) -> str:
    """What a failed request met, in words that say what to check."""
    if _refused(err):
        return f"connection refused at {url}: is the service running at that address?"
    if isinstance(err, httpx.TimeoutException):
        return f"no answer from {url} in time"
    return f"{err!s} ({type(err).__name__})"


def likely_bases(base: str) -> list[str]:
    """The addresses the API may be at when nothing of it answers at ``base``, most likely first: the
    OpenAI habit ``…/v1`` for ``…/api/v1``, ``/v1`` or ``/api/v1`` added, the origin's ``/api/v1``."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/")
    out: list[str] = []
    if path.endswith("/v1") and not path.endswith("/api/v1"):
        out.append(base[: -len("/v1")] + "/api/v1")
    elif path.endswith("/api"):
        out.append(f"{base}/v1")
    elif not path.endswith("/api/v1"):
        out.append(f"{base}/api/v1")
    out.append(f"{parts.scheme}://{parts.netloc}/api/v1")
    return [b for i, b in enumerate(out) if b != base and b not in out[:i]]


def address_hint(base: str, found: str | None = None) -> str:
    """What to check when nothing of the API answers at ``base`` (``found``: a likely address where it does): that
    address, else the first likely one, else, for a base already of the API's form, the host."""
    if found is not None:
        return (
            f"did you mean {found}? The API answers there: set base_url (or METER_BASE_URL) to that, the address "
            "up to and including /api/v1"
        )
    likely = likely_bases(base)
    if likely:
        return (
            f"did you mean {likely[0]}? base_url (or METER_BASE_URL) must be the service's address up to "
            "and including /api/v1, e.g. https://meter.example.com/api/v1"
        )
    parts = urlsplit(base)
    return (
        f"something answers at {parts.scheme}://{parts.netloc} but not the Meter API: check the host and port of "
        "base_url (or METER_BASE_URL), or the proxy in front of the service"
    )


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, float(at.timestamp()) - time.time())


def retryable(err: BaseException) -> bool:
    """True when the same request may succeed later: network errors, 408, 429 and 5xx."""
    return isinstance(err, MeterNetworkError) or (isinstance(err, MeterAPIError) and err.retryable)


_MIN_RETRY_AFTER = 0.25


def backoff(failures: int, err: MeterError | None = None) -> float:
    """Exponential backoff with jitter (0.5 s doubling up to 30 s), never shorter than Retry-After (taken up
    to 60 s). A 429's Retry-After is the service's own estimate of when it has room, so it is waited as given
    rather than doubled: a busy service is not left idle while its clients sit out a grown backoff.
    Retry-After gets up to half of itself again, so that clients told the same moment come back spread out."""
    base: float = min(30.0, 0.5 * 2.0 ** max(0, failures - 1))
    delay = base * (0.5 + random.random() / 2)
    after: float | None = err.retry_after if isinstance(err, MeterAPIError) else None
    if after is None:
        return delay
    # At least a quarter second: a Retry-After of 0 (a proxy's) must not make a busy service's clients spin.
    hinted = min(max(after, _MIN_RETRY_AFTER), 60.0) * (1 + random.random() / 2)
    return hinted if isinstance(err, MeterAPIError) and err.status == 429 else max(delay, hinted)
