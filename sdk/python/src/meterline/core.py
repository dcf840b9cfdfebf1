"""What Meter and AsyncMeter share: the options, the client's state and every rule over it (admission.py and
the layers below it), the public methods that do no I/O, and the steps of those that do, as flows (flow.py)
each shell performs: Meter blocking over httpx.Client with a delivery thread, AsyncMeter awaiting over
httpx.AsyncClient with a delivery task. The awaitable calls (guard, reserve, record) are written once here for
both: AsyncMeter's, and Meter's a-prefixed ones."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from .admission import LEASE_ROUNDS, Admission
from .clock import now as clock_now
from .context import _current
from .core_state import GateCallback
from .errors import MeterAPIError, MeterAuthenticationError
from .flow import Flow, Handle, wait_async
from .portal import portal_token_flow
from .process import register
from .queue import EventQueue
from .recording import Metadata
from .reservation import AsyncReserve, Reservation
from .state import UserEntry
from .types import (
    CreditsEvent,
    GuardResult,
    MeterStats,
    PortalToken,
    SessionStartState,
    StartResult,
    UsageEvent,
    UserState,
)
from .validate import check_usage, check_user, positive

log = logging.getLogger("meterline")


class MeterCore(Admission):
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

    # ---- what each shell provides ----

    def _open(self, base_url: str, api_key: str) -> None:
        """Makes the transport (and what runs flows in the background)."""
        raise NotImplementedError

    def _start_delivery(self) -> None:
        raise NotImplementedError

    def _reopen(self) -> None:
        """In a forked child: fresh connections and background workers."""
        raise NotImplementedError

    def _on_loop(self) -> None:
        """An awaitable call runs on an event loop (AsyncMeter starts its delivery task there)."""

    def _close_at_exit(self) -> None:
        raise NotImplementedError

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
        self, user_id: str, model: str | None = None, session_id: str | None = None, input_tokens: int | None = None,
        prompt: Any = None, metadata: Metadata = None, max_output_tokens: int | None = None,
    ) -> GuardResult:
        e = await self._entry_async(user_id)
        return self._check(e, model, session_id, input_tokens, prompt, metadata, max_output_tokens)

    async def _reserve_async(
        self, user_id: str, model: str | None = None, session_id: str | None = None, input_tokens: int | None = None,
        prompt: Any = None, metadata: Metadata = None, max_output_tokens: int | None = None,
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
        self, user_id: str, model: str | None = None, session_id: str | None = None, input_tokens: int | None = None,
        prompt: Any = None, metadata: Metadata = None, max_output_tokens: int | None = None,
    ) -> AsyncReserve:
        """``await meter.reserve(...)`` or ``async with meter.reserve(...) as r`` (Meter: ``areserve``)."""
        return AsyncReserve(
            self._reserve_async(user_id, model, session_id, input_tokens, prompt, metadata, max_output_tokens)
        )

    async def _record_async(
        self, user_id: str, model: str | None = None, input_tokens: int = 0, output_tokens: int = 0,
        tool_calls: list[str] | None = None, session_id: str | None = None, metadata: Metadata = None,
    ) -> UsageEvent:
        check_user(user_id)
        check_usage(input_tokens, output_tokens, tool_calls, metadata, session_id, model)
        e = await self._entry_async(user_id)
        return self._record(e, model, input_tokens, output_tokens, tool_calls, session_id, metadata)

    # ---- the steps of start(), refresh(), flush(), shutdown() ----

    def _started(self, health: str, changes: Any) -> Flow[StartResult]:
        """What start() found, from the health check's word and the key check's answer (or its error)."""
        key_err = changes if isinstance(changes, BaseException) else None
        healthy = health == "ok"
        if health == "not_found":
            self.misaddressed((yield from self._wrong_address()))
            return StartResult(healthy=False, authenticated=False)
        if health == "degraded":
            self._warn("the service answers but reports its database unreachable; sessions may not load")
        if health in ("refused", "timeout", "unreachable"):
            self._http.reachable = False
            at = f"{self._http.base}/health"
            what = (
                f"connection refused at {at}: is the service running at that address?"
                if health == "refused"
                else f"the service did not answer a health check at {at} within {self.startup_timeout:g} s"
                if health == "timeout"
                else f"the health check at {at} failed (an error answer or no connection)"
            )
            self._warn(
                f"{what} " + ("calls are hard-gated" if self.fail_closed else "calls fail open") + " until it answers"
            )
            return StartResult(healthy=False, authenticated=False)
        self._http.reachable = True
        if key_err is not None:
            if isinstance(key_err, MeterAPIError) and key_err.status in (401, 403):
                self._key_refused(key_err)
            else:
                self._warn("the API key could not be checked", key_err)
            return StartResult(healthy=healthy, authenticated=False)
        with self._lock:
            self._refused_key = None
            if isinstance(changes, dict) and isinstance(changes.get("marker"), int):
                self._marker = changes["marker"]
        return StartResult(healthy=healthy, authenticated=True)

    def _refresh_now(self, user_id: str) -> tuple[UserEntry | None, Handle | None]:
        """refresh(): the user's entry (None when not cached: the shell loads it) and its forced reload."""
        check_user(user_id)
        with self._lock:
            e = self._users.get(user_id)
        if e is None:
            return None, None
        if self._leases is not None:
            self._leases.renew(user_id)
        return e, self._refresh(e, self.request_timeout, force=True)

    def _hopeless(self) -> bool:
        """No delivery can succeed until someone acts: the key is refused."""
        return self._refused_key is not None

    def _portal_token(self, user_id: str, ttl_seconds: int | None = None) -> Flow[PortalToken]:
        """``POST /users/{user_id}/portal-tokens``: a token that reads this one user's state (``GET /portal/me``,
        the ``<meter-usage>`` widget) and nothing else, for the user's browser; mint one per page view.
        ``ttl_seconds`` 60-86,400 (default 3,600 on the service). Raises MeterAPIError (404: no such user)."""
        return portal_token_flow(user_id, ttl_seconds)

    def _flush(self, timeout: float | None = None) -> Flow[bool]:
        """flush(): delivers what is queued, retrying transient failures up to ``timeout`` (default shutdown_timeout).
        True when the queue emptied, False when time ran out; raises MeterAuthenticationError, at once,
        when the service refuses the API key (no retry can deliver until it is fixed)."""
        deadline = time.monotonic() + (self.shutdown_timeout if timeout is None else timeout)
        if (yield from self._queue.drain(deadline, self._hopeless)):
            return True
        refused = self._refused_key
        if refused is not None:
            raise MeterAuthenticationError(refused.status, f"{self._queue.size} events not delivered: {refused.detail}")
        return False

    def _shutdown(self, timeout: float | None = None) -> Flow[bool]:
        """Stops the delivery thread (or task), settles open integration calls, gives back leases, delivers the
        queue."""
        with self._lock:
            if self._closed:
                closed_before = True
            else:
                closed_before = False
                self._closed = True
        if not closed_before:
            self._delivery.stop()
            for cb in self._closing:
                self._safely(cb)
        deadline = time.monotonic() + (self.shutdown_timeout if timeout is None else timeout)
        if self._leases is not None:
            yield from self._leases.release_all(max(0.1, deadline - time.monotonic()))
        drained = yield from self._queue.drain(deadline, self._hopeless)
        if not drained:
            # Never raises: a refused key was logged as an error when it was met.
            why = " (the API key is refused)" if self._refused_key is not None else ""
            self._warn(f"shutdown: {self._queue.size} events could not be delivered{why}")
        return drained

    def _tick(self) -> Flow[None]:
        """Every flush interval, on the delivery thread or task: the change poll (in the background, so a slow
        answer never holds deliveries), the idle sweep every min(refresh_interval, 60 s), a delivery pass."""
        try:
            now = time.monotonic()
            # flush() wakes the thread early too: still one poll per interval, not one per flush.
            if now - self._last_poll >= self.flush_interval * 0.9:
                self._last_poll = now
                self._spawn(self._changes())
            if now - self._last_sweep >= min(60.0, self.refresh_interval):
                self._last_sweep = now
                self._sweep()
                self._expire_credits()
                if self._leases is not None:
                    yield from self._leases.release_idle()
            if self._queue.due():
                yield from self._queue.pass_once()
        except Exception as err:  # the thread or task must outlive any bug in one pass
            self._warn("delivery pass failed", err)

    def _after_fork_in_child(self) -> None:
        """The child of os.fork(): its own lock, connections, load workers and delivery thread; the
        parent's queue stays the parent's to send (nothing twice); its leases stay the parent's."""
        self._lock = threading.RLock()
        self._queue.clear_after_fork()
        self._queue.lock = self._lock
        self._loading = {}
        self._unpriced_ids = set()
        # A poll the parent had in flight has no thread here to finish it.
        self._polling_changes = False
        for e in self._users.values():
            e.pending = 0
            e.unpriced = []
            e.refreshing = None
            e.refresh_at = 0.0
        if self._leases is not None:
            self._leases.after_fork()
        self._reopen()
        if not self._closed:
            self._start_delivery()
