"""What Meter and AsyncMeter share: the options, the client's state and every rule over it (lifecycle.py,
admission.py and the layers below them), the public methods that do no I/O; the steps of those that do are
flows (flow.py, lifecycle.py) each shell performs: Meter blocking over httpx.Client with a delivery thread,
AsyncMeter awaiting over httpx.AsyncClient with a delivery task. The awaitable calls (guard, reserve, record)
are written once here for both: AsyncMeter's, and Meter's a-prefixed ones."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from .admission import LEASE_ROUNDS
from .clock import now as clock_now
from .context import _current
from .core_state import GateCallback
from .flow import wait_async
from .lifecycle import Lifecycle
from .process import register
from .queue import EventQueue
from .recording import Metadata
from .reservation import AsyncReserve, Reservation
from .state import UserEntry
from .types import (
    CreditsEvent,
    GuardResult,
    MeterStats,
    SessionStartState,
    UsageEvent,
    UserState,
)
from .validate import check_usage, check_user, positive

log = logging.getLogger("meterline")


class MeterCore(Lifecycle):
    """Enforces each user's plan in this process and meters what the calls use."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        blocking: bool = True,
        flush_interval: float = 5.0,
        max_queue_size: int = 10_000,
        refresh_interval: float = 60.0,
        startup_timeout: float = 3.0,
        max_batch_size: int = 1000,
        request_timeout: float = 10.0,
        shutdown_timeout: float = 10.0,
        *,
        fail_closed: bool = False,
        logger: logging.Logger | None = None,
        on_error: Callable[[BaseException], Any] | None = None,
        leases: bool = False,
        lease_fallback: str = "slice",
        lease_ttl: float = 60.0,
        lease_calls: int = 40,
        lease_idle: float = 10.0,
    ) -> None:
        api_key = api_key if api_key is not None else os.environ.get("METER_API_KEY")
        base_url = base_url if base_url is not None else os.environ.get("METER_BASE_URL")
        if not api_key:
            raise ValueError("Meter: api_key is required (or set METER_API_KEY)")
        if not base_url:
            raise ValueError(
                "Meter: base_url is required (or set METER_BASE_URL), e.g. https://meter.example.com/api/v1"
            )
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"Meter: base_url must be an http(s) URL, got {base_url}")
        if parts.path.rstrip("/") == "":
            # Every request would 404 and every event be dropped: say what to fix instead.
            raise ValueError(
                f"Meter: base_url {base_url} has no API path; the service's API is under /api/v1: "
                f"use base_url={base_url.rstrip('/')}/api/v1"
            )
        self.blocking = blocking
        self.fail_closed = fail_closed
        self.flush_interval = positive("flush_interval", flush_interval)
        self.refresh_interval = positive("refresh_interval", refresh_interval)
        self.startup_timeout = positive("startup_timeout", startup_timeout)
        self.shutdown_timeout = positive("shutdown_timeout", shutdown_timeout)
        self.request_timeout = positive("request_timeout", request_timeout)
        max_queue = int(positive("max_queue_size", max_queue_size))
        max_batch = min(int(positive("max_batch_size", max_batch_size)), 10_000)
        self._logger = logger or log
        self._on_error = on_error
        self._open(base_url, api_key)
        self._lock = threading.RLock()
        self._users = {}
        self._loading = {}
        self._manual_ids = set()
        self._unpriced_ids = set()
        self._soft = []
        self._hard = []
        self._usage = []
        self._session_start = []
        self._closing = []
        self._credits_low = []
        self._credits_depleted = []
        self._credits_expired = []
        self._marker = None
        self._polling_changes = False
        self._changes_retry_at = 0.0
        self._key_refused_logged = False
        self._refused_key = None
        self._last_poll = 0.0
        self._closed = False
        self._last_sweep = time.monotonic()
        self._queue = EventQueue(self._http.base, self._lock, max_queue, max_batch, self)
        self._leases = None
        if leases:
            from .lease_books import LeaseSettings
            from .leases import Leases

            if lease_fallback not in ("slice", "open"):
                raise ValueError(f'Meter: lease_fallback must be "slice" or "open", got {lease_fallback!r}')
            self._leases = Leases(
                LeaseSettings(
                    ttl=positive("lease_ttl", lease_ttl),
                    calls=int(positive("lease_calls", lease_calls)),
                    idle=positive("lease_idle", lease_idle),
                    fallback=lease_fallback,
                ),
                self._warn,
                self._spawn,
            )
        self._start_delivery()
        register(self)

    # ---- callbacks, state, and calls that never wait ----

    def on_soft_gate(self, cb: GateCallback) -> None:
        self._soft.append(cb)

    def on_hard_gate(self, cb: GateCallback) -> None:
        self._hard.append(cb)

    def on_usage(self, cb: Callable[[UsageEvent], Any]) -> None:
        self._usage.append(cb)

    def on_session_start(self, cb: Callable[[SessionStartState], Any]) -> None:
        self._session_start.append(cb)

    def on_credits_low(self, cb: Callable[[CreditsEvent], Any]) -> None:
        """Prepaid credits: ``cb`` runs once each time a user's balance, as this process counts it, falls below the
        plan's credits_low_at (armed again when a grant lifts it back): the moment to charge the customer and post a
        grant (auto top-up)."""
        self._credits_low.append(cb)

    def on_credits_depleted(self, cb: Callable[[CreditsEvent], Any]) -> None:
        """Prepaid credits: ``cb`` runs when a user's balance goes from above 0 to 0 or below."""
        self._credits_depleted.append(cb)

    def on_credits_expired(self, cb: Callable[[CreditsEvent], Any]) -> None:
        """Prepaid credits: ``cb`` runs when a grant of a user expires with money left (at its expires_at, seen
        within the client's sweep or at the user's next call after it)."""
        self._credits_expired.append(cb)

    def on_shutdown(self, cb: Callable[[], Any]) -> None:
        """Runs when shutdown() starts, before its final delivery (integrations settle calls still open)."""
        self._closing.append(cb)

    def state(self, user_id: str) -> UserState | None:
        """The user's cached state; None before the user's first guard/record."""
        with self._lock:
            e = self._users.get(user_id)
            return None if e is None else e.snapshot(clock_now())

    @contextlib.contextmanager
    def user(self, user_id: str, session_id: str | None = None) -> Iterator[None]:
        """Sets the user (and optionally the session) of this context for the model-client integrations."""
        check_user(user_id)
        token = _current.set((user_id, session_id))
        try:
            yield
        finally:
            _current.reset(token)

    @property
    def stats(self) -> MeterStats:
        q = self._queue
        with self._lock:
            return MeterStats(
                queued=q.size,
                sent=q.sent,
                dropped=q.dropped,
                rejected=q.rejected,
                users=len(self._users),
                lease_requests=None if self._leases is None else self._leases.requests,
                held=q.held,
                key_refused=self._refused_key is not None,
            )

    def reserve_now(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: dict[str, Any] | None = None,
        max_output_tokens: int | None = None,
    ) -> Reservation | None:
        """reserve() without any wait, or None when it would wait (view not loaded, a lease to ask for).
        For integrations: a warm user costs them no thread hop or await."""
        check_user(user_id)
        e = self._ready(user_id)
        if e is None:
            return None
        if self._leases is not None:
            input_tokens = self._sized(e, model, input_tokens, prompt)
            need = self._lease_need(e, model, input_tokens, prompt, max_output_tokens)
            if need is not None and not self._leases.covers(e, need):
                return None
        return self._reserve_now(e, model, session_id, input_tokens, prompt, metadata, max_output_tokens)

    # ---- the awaitable calls (AsyncMeter's guard/reserve/record; Meter's aguard/areserve/arecord) ----

    async def _entry_async(self, user_id: str) -> UserEntry:
        check_user(user_id)
        self._on_loop()
        e = self._ready(user_id)
        if e is not None:
            return e
        e, h, rollover = self._begin_load(user_id)
        if self._http.reachable:
            await wait_async(h, self.startup_timeout)
        return self._end_load(e, rollover)

    async def _guard_async(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: Metadata = None,
        max_output_tokens: int | None = None,
    ) -> GuardResult:
        e = await self._entry_async(user_id)
        return self._check(e, model, session_id, input_tokens, prompt, metadata, max_output_tokens)

    async def _reserve_async(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: Metadata = None,
        max_output_tokens: int | None = None,
    ) -> Reservation:
        e = await self._entry_async(user_id)
        input_tokens, need = self._lease_plan(e, model, input_tokens, prompt, max_output_tokens)
        for _ in range(LEASE_ROUNDS if need is not None else 0):
            assert self._leases is not None and need is not None
            asking = self._leases.asking(e, need)
            if asking is None or not await wait_async(asking, None):
                break
        return self._reserve_now(e, model, session_id, input_tokens, prompt, metadata, max_output_tokens)

    def _reserve_cm(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: Metadata = None,
        max_output_tokens: int | None = None,
    ) -> AsyncReserve:
        """``await meter.reserve(...)`` or ``async with meter.reserve(...) as r`` (Meter: ``areserve``)."""
        return AsyncReserve(
            self._reserve_async(user_id, model, session_id, input_tokens, prompt, metadata, max_output_tokens)
        )

    async def _record_async(
        self,
        user_id: str,
        model: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        tool_calls: list[str] | None = None,
        session_id: str | None = None,
        metadata: Metadata = None,
    ) -> UsageEvent:
        check_user(user_id)
        check_usage(input_tokens, output_tokens, tool_calls, metadata, session_id, model)
        e = await self._entry_async(user_id)
        return self._record(e, model, input_tokens, output_tokens, tool_calls, session_id, metadata)
