"""The REST API under /api/v1, over httpx."""

from __future__ import annotations

import email.utils
import json
import random
import time
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from .errors import MeterAPIError, MeterAuthenticationError, MeterError, MeterNetworkError

VERSION = "0.1.0"


class Transport:
    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self.base = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        # False after a request found the service unreachable, until one succeeds.
        self.reachable = True
        self._client = self._new_client()

    def _new_client(self) -> httpx.Client:
        return httpx.Client(
            headers={
                "authorization": f"Bearer {self.api_key}",
                "accept": "application/json",
                "user-agent": f"meterline-python/{VERSION}",
            },
            timeout=self.timeout,
        )

    def after_fork(self) -> None:
        """The parent's connections are not this process's to use: a fresh pool."""
        self._client = self._new_client()

    def close(self) -> None:
        self._client.close()

    def request(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        """The parsed body of a 2xx; raises MeterAPIError or MeterNetworkError."""
        content = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = {"content-type": "application/json"} if content is not None else None
        try:
            res = self._client.request(
                method,
                self.base + path,
                content=content,
                headers=headers,
                timeout=self.timeout if timeout is None else timeout,
            )
        except (httpx.HTTPError, OSError) as err:
            self.reachable = False
            raise MeterNetworkError(f"meter service unreachable: {_failure(err, self.base + path)}") from err
        self.reachable = res.status_code < 500
        parsed: Any = None
        if res.content:
            try:
                parsed = res.json()
            except ValueError:
                parsed = None
        if not res.is_success:
            raw = parsed.get("detail") if isinstance(parsed, dict) else None
            detail = raw if isinstance(raw, str) else res.reason_phrase
            if res.status_code in (401, 403):
                raise MeterAuthenticationError(res.status_code, detail)
            raise MeterAPIError(res.status_code, detail, _retry_after(res.headers.get("retry-after")))
        return parsed

    def health(self, timeout: float, base: str | None = None) -> str:
        """GET /health (no key needed): "ok", "degraded" (answers, database unreachable), "not_found"
        (something answers there, but not the API's health route: a wrong address), "refused" (nothing
        listens there), "timeout" (no answer in time) or "unreachable" (a 5xx, a reset, an unknown host)."""
        try:
            res = self._client.get(f"{base or self.base}/health", timeout=timeout)
        except (httpx.HTTPError, OSError) as err:
            if _refused(err):
                return "refused"
            return "timeout" if isinstance(err, httpx.TimeoutException) else "unreachable"
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

    def get_session(self, user_id: str, timeout: float | None = None) -> dict[str, Any]:
        view: dict[str, Any] = self.request("GET", f"/users/{quote(user_id, safe='')}/session", timeout=timeout)
        return view


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
    """True when the same request may succeed later: network errors, 429 and 5xx."""
    return isinstance(err, MeterNetworkError) or (isinstance(err, MeterAPIError) and err.retryable)


def backoff(failures: int, err: MeterError | None = None) -> float:
    """Exponential backoff with jitter (0.5 s doubling up to 30 s), never shorter than Retry-After."""
    base: float = min(30.0, 0.5 * 2.0 ** max(0, failures - 1))
    delay = base * (0.5 + random.random() / 2)
    after: float | None = err.retry_after if isinstance(err, MeterAPIError) else None
    return delay if after is None else max(delay, min(after, 60.0))
