"""The client: session views, guards, reservations, metering and delivery."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import inspect
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .context import _current
from .errors import LimitExceededError, MeterAPIError, MeterAuthenticationError, MeterError, MeterUnavailableError
from .gates import evaluate
from .money import add_dollars
from .pricing import estimate_tokens, normalize_model, rate_of, token_cost, tools_cost
from .queue import DeliveryThread, Event, EventQueue
from .reservation import NOTHING, Hold, Reservation, ReservationAmount, reservation_of
from .session_view import apply_view, roll_locally
from .state import UserEntry, iso
from .transport import Transport, backoff, likely_bases, retryable
from .types import (
    BillingPeriod,
    GateContext,
    GuardResult,
    ManualEvent,
    MeterStats,
    SessionStartState,
    StartResult,
    UsageEvent,
    UserState,
)
from .user_sessions import Session
from .validate import check_manual, check_usage, check_user, positive

if TYPE_CHECKING:
    from .leases import Leases

log = logging.getLogger("meterline")

# One gate event per (user, gate_reason, kind) per this many seconds at most.
GATE_EVENT_INTERVAL = 5.0
# fail_closed's gate reason: the session view could not be loaded (no gate event: not the service's to record).
SESSION_UNAVAILABLE = "session_unavailable"
# Retry delay of a session load that failed (capped by refresh_interval).
LOAD_RETRY = 5.0
MANUAL_ATTEMPTS = 3
MODEL_CACHE = 256
MANUAL_IDS = 10_000
# Lease requests one reserve() waits for at most (the one in flight, then its own): near the cap a call
# waits about one round trip, never an open-ended queue of them.
LEASE_ROUNDS = 2

GateCallback = Callable[[GuardResult, GateContext], Any]


class Meter:
    """Enforces each user's plan in this process and meters what the calls use. Thread-safe."""

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
        self._transport = Transport(base_url, api_key, self.request_timeout)
        self._lock = threading.RLock()
        self._users: dict[str, UserEntry] = {}
        self._loading: dict[str, tuple[UserEntry, Future[None]]] = {}
        self._manual_ids: set[str] = set()
        self._unpriced_ids: set[str] = set()
        self._soft: list[GateCallback] = []
        self._hard: list[GateCallback] = []
        self._usage: list[Callable[[UsageEvent], Any]] = []
        self._session_start: list[Callable[[SessionStartState], Any]] = []
        self._closing: list[Callable[[], Any]] = []
        # The product's change marker last seen (GET /config/changes); None until the first answer.
        self._marker: int | None = None
        self._polling_changes = False
        # The change route answered 404 (a service from before it, or a wrong address): asked again only after this.
        self._changes_retry_at = 0.0
        self._key_refused_logged = False
        # The service refused the key, and has accepted nothing since: what flush() raises.
        self._refused_key: MeterAuthenticationError | None = None
        self._last_poll = 0.0
        self._closed = False
        self._last_sweep = time.monotonic()
        self._queue = EventQueue(self._transport, self._lock, max_queue, max_batch, self)
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="meter-load")
        self._leases: Leases | None = None
        if leases:
            from .leases import Leases, LeaseSettings

            if lease_fallback not in ("slice", "open"):
                raise ValueError(f'Meter: lease_fallback must be "slice" or "open", got {lease_fallback!r}')
            self._leases = Leases(
                self._transport,
                LeaseSettings(
                    ttl=positive("lease_ttl", lease_ttl),
                    calls=int(positive("lease_calls", lease_calls)),
                    idle=positive("lease_idle", lease_idle),
                    fallback=lease_fallback,
                ),
                self._warn,
                self._executor,
            )
        self._delivery = DeliveryThread(self._queue, self.flush_interval, self._tick)
        _register(self)

    # ---- start and callbacks ----

    def start(self) -> StartResult:
        """``GET /health`` and an authenticated ``GET /config/changes`` (which also gives the change
        marker), at once, each within startup_timeout. Never raises."""
        # Both at once: a busy service answers within startup_timeout, not twice that.
        key: Future[Any] = self._executor.submit(
            self._transport.request, "GET", "/config/changes", None, self.startup_timeout
        )
        health = self._transport.health(self.startup_timeout)
        healthy = health == "ok"
        try:
            changes = key.result(self.startup_timeout + 1)
            key_err: BaseException | None = None
        except BaseException as err:
            changes, key_err = None, err
        if health == "not_found":
            self.misaddressed(self._wrong_address())
            return StartResult(healthy=False, authenticated=False)
        if health == "degraded":
            self._warn("the service answers but reports its database unreachable; sessions may not load")
        if health in ("refused", "timeout", "unreachable"):
            self._transport.reachable = False
            at = f"{self._transport.base}/health"
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
        self._transport.reachable = True
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

    def _wrong_address(self) -> MeterError:
        """Why nothing of the API answers at base_url, with the address to use when it can be found."""
        base = self._transport.base
        candidates = likely_bases(base)
        found = next(
            (b for b in candidates if self._transport.health(self.startup_timeout, b) in ("ok", "degraded")), None
        )
        hint = (
            f"did you mean {found}? The API answers there: set base_url (or METER_BASE_URL) to that, the address "
            "up to and including /api/v1"
            if found is not None
            else f"did you mean {candidates[0]}? base_url (or METER_BASE_URL) must be the service's address up to "
            "and including /api/v1, e.g. https://meter.example.com/api/v1"
        )
        return MeterError(
            f"nothing of the Meter API answers at {base} (GET {base}/health: 404); {hint}. Until it is fixed, no event "
            "is delivered and "
            + (
                "users whose session is not loaded are hard-gated (fail_closed)"
                if self.fail_closed
                else "users whose session is not loaded run on permissive defaults"
            ),
        )

    def _key_refused(self, err: MeterAPIError) -> None:
        """The service refused the API key: logged as an error once per client, not once per user."""
        with self._lock:
            self._refused_key = MeterAuthenticationError(err.status, err.detail)
            if self._key_refused_logged:
                return
            self._key_refused_logged = True
        self._error(
            f"the service refused the API key ({err.status}: {err.detail}); no plan can be loaded, so "
            + (
                "every call is hard-gated (fail_closed)"
                if self.fail_closed
                else "every user runs on permissive defaults"
            )
            + ", and no event is delivered (they are held, see stats): check api_key / METER_API_KEY",
            err,
        )

    async def astart(self) -> StartResult:
        return await asyncio.to_thread(self.start)

    def on_soft_gate(self, cb: GateCallback) -> None:
        self._soft.append(cb)

    def on_hard_gate(self, cb: GateCallback) -> None:
        self._hard.append(cb)

    def on_usage(self, cb: Callable[[UsageEvent], Any]) -> None:
        self._usage.append(cb)

    def on_session_start(self, cb: Callable[[SessionStartState], Any]) -> None:
        self._session_start.append(cb)

    def on_shutdown(self, cb: Callable[[], Any]) -> None:
        """Runs when shutdown() starts, before its final delivery (integrations settle calls still open)."""
        self._closing.append(cb)

    # ---- guard / reserve / record ----

    def guard(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: dict[str, Any] | None = None,
        max_output_tokens: int | None = None,
    ) -> GuardResult:
        """Checks a coming call. Raises LimitExceededError on a hard gate when blocking."""
        check_user(user_id)
        e = self._ready(user_id) or self._load(user_id)
        res = self._admit(e, model, session_id, input_tokens, prompt, metadata, False, max_output_tokens)
        assert isinstance(res, tuple)
        return self._after_gate(*res)

    async def aguard(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: dict[str, Any] | None = None,
        max_output_tokens: int | None = None,
    ) -> GuardResult:
        check_user(user_id)
        e = self._ready(user_id) or await self._aload(user_id)
        res = self._admit(e, model, session_id, input_tokens, prompt, metadata, False, max_output_tokens)
        assert isinstance(res, tuple)
        return self._after_gate(*res)

    def reserve(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: dict[str, Any] | None = None,
        max_output_tokens: int | None = None,
    ) -> Reservation:
        """guard() and, with pre_call_estimate, the estimate held against the limits in the same step."""
        check_user(user_id)
        e = self._ready(user_id) or self._load(user_id)
        if self._leases is not None:
            input_tokens = self._sized(e, model, input_tokens, prompt)
            need = self._lease_need(e, model, input_tokens, prompt, max_output_tokens)
            if need is not None:
                for _ in range(LEASE_ROUNDS):
                    if self._leases.covers(e, need):
                        break
                    if not self._leases.ask(e, need).result():
                        break
        return self._reserve_now(e, model, session_id, input_tokens, prompt, metadata, max_output_tokens)

    def areserve(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: dict[str, Any] | None = None,
        max_output_tokens: int | None = None,
    ) -> _AsyncReserve:
        """``await meter.areserve(...)`` or ``async with meter.areserve(...) as r``."""
        return _AsyncReserve(
            self._areserve(user_id, model, session_id, input_tokens, prompt, metadata, max_output_tokens)
        )

    async def _areserve(
        self,
        user_id: str,
        model: str | None,
        session_id: str | None,
        input_tokens: int | None,
        prompt: Any,
        metadata: dict[str, Any] | None,
        max_output_tokens: int | None,
    ) -> Reservation:
        check_user(user_id)
        e = self._ready(user_id) or await self._aload(user_id)
        if self._leases is not None:
            input_tokens = self._sized(e, model, input_tokens, prompt)
            need = self._lease_need(e, model, input_tokens, prompt, max_output_tokens)
            if need is not None:
                for _ in range(LEASE_ROUNDS):
                    if self._leases.covers(e, need):
                        break
                    if not await asyncio.wrap_future(self._leases.ask(e, need)):
                        break
        return self._reserve_now(e, model, session_id, input_tokens, prompt, metadata, max_output_tokens)

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

    def _reserve_now(
        self,
        e: UserEntry,
        model: str | None,
        session_id: str | None,
        input_tokens: int | None,
        prompt: Any,
        metadata: dict[str, Any] | None,
        max_output_tokens: int | None,
    ) -> Reservation:
        res = self._admit(e, model, session_id, input_tokens, prompt, metadata, True, max_output_tokens)
        assert isinstance(res, tuple)
        result, ctx, event_info, reservation = res
        self._after_gate(result, ctx, event_info, reservation)
        assert reservation is not None
        return reservation

    def record(
        self,
        user_id: str,
        model: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        tool_calls: list[str] | None = None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> UsageEvent:
        """Meters a call that already ran."""
        check_user(user_id)
        check_usage(input_tokens, output_tokens, tool_calls, metadata, session_id, model)
        e = self._ready(user_id) or self._load(user_id)
        return self._record(e, model, input_tokens, output_tokens, tool_calls, session_id, metadata)

    async def arecord(
        self,
        user_id: str,
        model: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        tool_calls: list[str] | None = None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> UsageEvent:
        check_user(user_id)
        check_usage(input_tokens, output_tokens, tool_calls, metadata, session_id, model)
        e = self._ready(user_id) or await self._aload(user_id)
        return self._record(e, model, input_tokens, output_tokens, tool_calls, session_id, metadata)

    def _record(
        self,
        e: UserEntry,
        model: str | None,
        input_tokens: int,
        output_tokens: int,
        tool_calls: list[str] | None,
        session_id: str | None,
        metadata: dict[str, Any] | None,
    ) -> UsageEvent:
        now = time.time()
        with self._lock:
            session = e.sessions.at(_session_of(e.user_id, session_id), now, e.timeout)
            event = self._meter(
                e, session, self._model(e, model), input_tokens, output_tokens, tool_calls, metadata, now
            )
        self._fire(self._usage, event)
        return event

    def record_manual(
        self,
        user_id: str,
        cost: float | None = None,
        model: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        description: str | None = None,
        tool_calls: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> ManualEvent:
        """POST /events, priced by the service unless ``cost`` is given. Retried up to 3 times on network
        errors, 429 and 5xx with one idempotency key, then raised (MeterAPIError / MeterNetworkError)."""
        check_user(user_id)
        check_manual(
            cost, input_tokens, output_tokens, description, tool_calls, metadata, session_id, model, idempotency_key
        )
        session_id = _session_of(user_id, session_id)
        body: dict[str, Any] = {
            "user_id": user_id,
            "idempotency_key": idempotency_key or str(uuid.uuid4()),
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
        }
        for k, v in (
            ("cost", cost),
            ("model", model),
            ("description", description),
            ("tool_calls", tool_calls),
            ("metadata", metadata),
            ("session_id", session_id),
        ):
            if v is not None:
                body[k] = v
        attempt = 1
        while True:
            try:
                raw = self._transport.request("POST", "/events", body)
                break
            except MeterError as err:
                if not retryable(err) or attempt >= MANUAL_ATTEMPTS:
                    raise
                time.sleep(backoff(attempt, err))
                attempt += 1
        created = ManualEvent(
            id=raw["id"],
            user_id=raw["user_id"],
            cost=float(raw["cost"]),
            model=raw.get("model"),
            source=raw.get("source", "manual"),
            created_at=raw["created_at"],
        )
        now = time.time()
        with self._lock:
            fresh = created.id not in self._manual_ids
            if fresh:
                if len(self._manual_ids) >= MANUAL_IDS:
                    self._manual_ids.clear()
                self._manual_ids.add(created.id)
            e = self._users.get(user_id)
            session = e.sessions.at(_session_of(e.user_id, session_id), now, e.timeout) if e is not None else None
            if e is not None and session is not None and fresh:
                self._count(e, session, created.model, input_tokens + output_tokens, created.cost)
        if fresh:
            self._fire(
                self._usage,
                UsageEvent(
                    id=created.id,
                    user_id=user_id,
                    session_id=session_id or (session.id if session else None),
                    timestamp=created.created_at,
                    model=created.model,
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    total_tokens=input_tokens + output_tokens,
                    tool_calls=list(tool_calls or []),
                    cost_tokens=created.cost,
                    cost_tools=0.0,
                    cost_total=created.cost,
                    metadata=dict(metadata or {}),
                    synced=True,
                ),
            )
        return created

    async def arecord_manual(self, user_id: str, **kwargs: Any) -> ManualEvent:
        return await asyncio.to_thread(lambda: self.record_manual(user_id, **kwargs))

    def state(self, user_id: str) -> UserState | None:
        """The user's cached state; None before the user's first guard/record."""
        with self._lock:
            e = self._users.get(user_id)
            return None if e is None else e.snapshot(time.time())

    @contextlib.contextmanager
    def user(self, user_id: str, session_id: str | None = None) -> Iterator[None]:
        """Sets the user (and optionally the session) of this context for the model-client integrations."""
        check_user(user_id)
        token = _current.set((user_id, session_id))
        try:
            yield
        finally:
            _current.reset(token)

    def refresh(self, user_id: str) -> bool:
        """Reloads the user's session view now (a plan or subscription just changed). True when it loaded."""
        check_user(user_id)
        with self._lock:
            e = self._users.get(user_id)
        if e is None:
            e = self._load(user_id)
            return e.loaded
        if self._leases is not None:
            self._leases.renew(user_id)
        fut = self._refresh(e, self.request_timeout, force=True)
        try:
            fut.result(self.request_timeout + 1)
        except FutureTimeout:
            return False
        return e.loaded and not e.load_failed

    async def arefresh(self, user_id: str) -> bool:
        return await asyncio.to_thread(self.refresh, user_id)

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

    def flush(self, timeout: float | None = None) -> bool:
        """Delivers what is queued, retrying transient failures up to ``timeout`` (default shutdown_timeout).
        True when the queue emptied, False when time ran out; raises MeterAuthenticationError, at once,
        when the service refuses the API key (no retry can deliver until it is fixed)."""
        deadline = time.monotonic() + (self.shutdown_timeout if timeout is None else timeout)
        if self._queue.drain(deadline, lambda: self._refused_key is not None):
            return True
        refused = self._refused_key
        if refused is not None:
            raise MeterAuthenticationError(refused.status, f"{self._queue.size} events not delivered: {refused.detail}")
        return False

    async def aflush(self, timeout: float | None = None) -> bool:
        return await asyncio.to_thread(self.flush, timeout)

    def shutdown(self, timeout: float | None = None) -> bool:
        """Stops the delivery thread, settles open integration calls, gives back leases, delivers the queue."""
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
            self._leases.release_all(max(0.1, deadline - time.monotonic()))
        drained = self._queue.drain(deadline, lambda: self._refused_key is not None)
        if not drained:
            # Never raises: a refused key was logged as an error when it was met.
            why = " (the API key is refused)" if self._refused_key is not None else ""
            self._warn(f"shutdown: {self._queue.size} events could not be delivered{why}")
        return drained

    async def ashutdown(self, timeout: float | None = None) -> bool:
        return await asyncio.to_thread(self.shutdown, timeout)

    # ---- loading ----

    def _ready(self, user_id: str) -> UserEntry | None:
        """The user's entry when usable as is (loaded, period not over); schedules a due reload."""
        e = self._users.get(user_id)
        if e is None:
            return None
        now = time.time()
        if now >= e.period_end_t:
            return None
        if now >= e.refresh_at and e.refreshing is None:
            self._refresh(e, None)
        return e

    def _begin_load(self, user_id: str) -> tuple[UserEntry, Future[None], bool]:
        """(entry, its load, rollover?) shared by concurrent first callers."""
        with self._lock:
            cached = self._users.get(user_id)
            if cached is not None:
                return cached, self._refresh(cached, self.startup_timeout), True
            pending = self._loading.get(user_id)
            if pending is None:
                e = UserEntry(user_id, time.time())
                pending = (e, self._refresh(e, self.startup_timeout))
                self._loading[user_id] = pending
            return pending[0], pending[1], False

    def _end_load(self, e: UserEntry, rollover: bool) -> UserEntry:
        with self._lock:
            if rollover:
                now = time.time()
                if now >= e.period_end_t:
                    roll_locally(e, now)
                return e
            self._users.setdefault(e.user_id, e)
            self._loading.pop(e.user_id, None)
            return self._users[e.user_id]

    def _load(self, user_id: str) -> UserEntry:
        """Waits for the view up to startup_timeout, and not at all while the service is known to be
        unreachable: then the user starts with permissive defaults (or fail_closed) until it arrives."""
        e, fut, rollover = self._begin_load(user_id)
        if self._transport.reachable:
            with contextlib.suppress(FutureTimeout):
                fut.result(self.startup_timeout)
        return self._end_load(e, rollover)

    async def _aload(self, user_id: str) -> UserEntry:
        e, fut, rollover = self._begin_load(user_id)
        if self._transport.reachable:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(fut)), self.startup_timeout)
        return self._end_load(e, rollover)

    def _refresh(self, e: UserEntry, timeout: float | None, force: bool = False) -> Future[None]:
        """Reloads the user's view in the background (one request at a time per user); never raises."""
        with self._lock:
            if e.refreshing is not None and not force:
                return e.refreshing
            was_reachable = self._transport.reachable
            fut: Future[None] = Future()
            e.refreshing = fut
        try:
            self._executor.submit(self._do_refresh, e, timeout, was_reachable, fut)
        except RuntimeError:  # the executor is gone (interpreter exit)
            with self._lock:
                e.refreshing = None
            fut.set_result(None)
        return fut

    def _do_refresh(self, e: UserEntry, timeout: float | None, was_reachable: bool, fut: Future[None]) -> None:
        started = False
        try:
            try:
                view = self._transport.get_session(e.user_id, timeout)
            except MeterError as err:
                now = time.time()
                with self._lock:
                    if isinstance(err, MeterAPIError) and err.status == 404:
                        # Not registered (or deleted): permissive defaults; its events are still sent.
                        if e.loaded:
                            _forget(e, now)
                        e.unknown = True
                        e.load_failed = False
                        self._price(e)
                        e.refresh_at = now + self.refresh_interval
                        return
                    e.refresh_at = now + min(LOAD_RETRY, self.refresh_interval)
                    refused = isinstance(err, MeterAPIError) and err.status in (401, 403)
                    warn = was_reachable and not e.load_failed and not refused
                    e.load_failed = True
                if refused:
                    assert isinstance(err, MeterAPIError)
                    self._key_refused(err)
                if warn:
                    self._warn(
                        f"loading the session of {e.user_id} failed; "
                        + (
                            "its cached view is used"
                            if e.loaded
                            else "calls are hard-gated (fail_closed)"
                            if self.fail_closed
                            else "permissive defaults"
                        )
                        + " until it loads",
                        err,
                    )
                return
            now = time.time()
            with self._lock:
                if apply_view(e, view, now) == "reset":
                    e.recent = None
                e.load_failed = False
                e.refresh_at = now + self.refresh_interval
                self._price(e)
                if not e.started:
                    e.started = started = True
            if started:
                self._fire(
                    self._session_start,
                    SessionStartState(
                        user_id=e.user_id, plan=e.plan, billing_period=BillingPeriod(e.period_start, e.period_end)
                    ),
                )
        except Exception as err:  # a bug must not leave the user loading forever
            self._warn(f"loading the session of {e.user_id} failed", err)
        finally:
            with self._lock:
                if e.refreshing is fut:
                    e.refreshing = None
            fut.set_result(None)

    # ---- the check ----

    def _admit(
        self,
        e: UserEntry,
        model: str | None,
        session_id: str | None,
        input_tokens: int | None,
        prompt: Any,
        metadata: dict[str, Any] | None,
        hold: bool,
        max_output_tokens: int | None = None,
    ) -> tuple[GuardResult, GateContext | None, tuple[str, bool, float | None] | None, Reservation | None]:
        """Check and hold in one step under the lock. Callbacks and the raise come after, outside it."""
        if input_tokens is not None and (type(input_tokens) is not int or input_tokens < 0):
            raise TypeError("input_tokens must be a non-negative integer")
        if max_output_tokens is not None and (type(max_output_tokens) is not int or max_output_tokens < 0):
            raise TypeError("max_output_tokens must be a non-negative integer")
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError("session_id must be a string")
        now = time.time()
        with self._lock:
            plan = e.config
            m = self._model(e, model)
            session = e.sessions.at(_session_of(e.user_id, session_id), now, e.timeout)
            # Without pre_call_estimate the check does not read the call's own reservation: guard() skips it.
            if plan is not None and (hold or plan.pre_call_estimate):
                reserved = self._reservation(e, m, input_tokens, prompt, max_output_tokens)
            else:
                reserved = NOTHING
            est_cost, est_tokens = reserved.cost, reserved.tokens
            if self.fail_closed and not e.loaded and not e.unknown:
                result = GuardResult(
                    "hard_gate",
                    SESSION_UNAVAILABLE,
                    0.0,
                    0.0,
                    0.0,
                    f"The metering service is unavailable: the session of {e.user_id} could not be loaded (service "
                    "unreachable or API key refused), and fail_closed blocks calls until it loads",
                )
            else:
                result = evaluate(
                    plan,
                    add_dollars(e.period_cost, e.reserved_cost),
                    add_dollars(session.cost, session.reserved),
                    m,
                    (e.tokens_by_model.get(m, 0) + e.reserved_tokens.get(m, 0)) if m is not None else 0,
                    est_cost if reserved.exact else 0.0,
                    est_tokens if reserved.exact else 0.0,
                )
            lease: str | None = None
            if hold and result.status != "hard_gate" and self._leases is not None:
                need = self._leases.need(e, m, reserved)
                if need is not None:
                    taken = self._leases.take(e, need)
                    if isinstance(taken, GuardResult):
                        result = taken
                    else:
                        lease = taken
            ctx = None
            gate_info = None
            if result.status != "ok":
                ctx = GateContext(e.user_id, session.id, m)
                gate_info = (*self._gate_event(e, session, m, result, metadata, now), _resets_at(e, session, result))
            reservation = None
            blocked = result.status == "hard_gate" and self.blocking
            if hold and not blocked:
                e.reserved_cost = add_dollars(e.reserved_cost, est_cost)
                session.reserved = add_dollars(session.reserved, est_cost)
                if m is not None and est_tokens > 0:
                    e.reserved_tokens[m] = e.reserved_tokens.get(m, 0) + est_tokens
                e.in_flight += 1
                reservation = Reservation(self, Hold(e, session, m, est_cost, est_tokens, metadata, lease), result)
            elif hold and lease is not None and self._leases is not None:
                self._leases.unhold(e.user_id, lease, est_cost, m, est_tokens)
            return result, ctx, gate_info, reservation

    def _gate_event(
        self,
        e: UserEntry,
        session: Session,
        model: str | None,
        result: GuardResult,
        metadata: dict[str, Any] | None,
        now: float,
    ) -> tuple[str, bool]:
        """Writes a gate event at most once per (gate_reason, kind, and for session_spend the session) per
        5 s: soft, hard and blocked apart,
        so the first hard gate and the first blocked call always become events; later ones are counted."""
        hard = result.status == "hard_gate"
        blocked = hard and self.blocking
        reason = result.gate_reason or ""
        if not (reason in ("total_spend", "session_spend") or reason.startswith("model_limit:")):
            return reason, blocked  # not a plan's gate (fail_closed): callbacks only
        kind = "blocked" if blocked else result.status
        if e.gate_marks is None:
            e.gate_marks = {}
        # A session cap is a cap per session: two conversations at their caps are two gates.
        key = (reason, kind, session.id if reason == "session_spend" else None)
        mark = e.gate_marks.get(key)
        if mark is not None and now - mark[0] < GATE_EVENT_INTERVAL:
            mark[1] += 1
            return reason, blocked
        suppressed = 0 if mark is None else int(mark[1])
        e.gate_marks[key] = [now, 0]
        meta = dict(metadata or {})
        if suppressed:
            meta["suppressed_events"] = suppressed
        event = {
            "id": str(uuid.uuid4()),
            "user_id": e.user_id,
            "service_user_id": e.service_user_id,
            "session_id": session.id,
            "timestamp": iso(now),
            "status": "hard_gate" if hard else "soft_gate",
            "gate_reason": reason,
            "usage_pct": result.usage_pct,
            "current_value": result.current_value,
            "limit_value": result.limit_value,
            "model": model,
            "blocked": blocked,
            "message": result.message,
            "metadata": meta,
        }
        if self._queue.push("gate", event):
            e.pending += 1
        return reason, blocked

    def _after_gate(
        self,
        result: GuardResult,
        ctx: GateContext | None,
        gate_info: tuple[str, bool, float | None] | None,
        reservation: Reservation | None = None,
    ) -> GuardResult:
        if ctx is None or gate_info is None:
            return result
        hard = result.status == "hard_gate"
        for cb in self._hard if hard else self._soft:
            self._safely(cb, result, ctx)
        if gate_info[1]:
            at = gate_info[2]
            if result.gate_reason == SESSION_UNAVAILABLE:
                # An outage, not a limit: retry when the library next tries to load the view.
                retry = datetime.fromtimestamp(time.time() + LOAD_RETRY, timezone.utc)
                raise MeterUnavailableError(result, retry)
            raise LimitExceededError(result, None if at is None else datetime.fromtimestamp(at, timezone.utc))
        return result

    # ---- Ledger (Reservation) ----

    def _settle(
        self,
        hold: Hold,
        input_tokens: int,
        output_tokens: int,
        tool_calls: list[str] | None,
        metadata: dict[str, Any] | None,
    ) -> UsageEvent:
        check_usage(input_tokens, output_tokens, tool_calls, metadata, None, None)
        now = time.time()
        with self._lock:
            self._unhold_locked(hold)
            event = self._meter(
                hold.entry,
                hold.session,
                hold.model,
                input_tokens,
                output_tokens,
                tool_calls,
                metadata if metadata is not None else hold.metadata,
                now,
            )
        self._fire(self._usage, event)
        return event

    def _unhold(self, hold: Hold) -> None:
        with self._lock:
            self._unhold_locked(hold)

    def _unhold_locked(self, hold: Hold) -> None:
        e = hold.entry
        e.reserved_cost = _non_negative(add_dollars(e.reserved_cost, -hold.cost))
        hold.session.reserved = _non_negative(add_dollars(hold.session.reserved, -hold.cost))
        if hold.model is not None and hold.tokens > 0:
            e.reserved_tokens[hold.model] = _non_negative(e.reserved_tokens.get(hold.model, 0) - hold.tokens)
        e.in_flight -= 1
        if self._leases is not None:
            self._leases.unhold(e.user_id, hold.lease, hold.cost, hold.model, hold.tokens)

    # ---- metering ----

    def _meter(
        self,
        e: UserEntry,
        session: Session,
        model: str | None,
        input_tokens: int,
        output_tokens: int,
        tool_calls: list[str] | None,
        metadata: dict[str, Any] | None,
        now: float,
    ) -> UsageEvent:
        """Prices, counts and queues one call's usage. Caller holds the lock."""
        tools = list(tool_calls or [])
        plan = e.config
        ct = token_cost(input_tokens, output_tokens, rate_of(model, plan))
        tc = tools_cost(tools, plan)
        event = UsageEvent(
            id=str(uuid.uuid4()),
            user_id=e.user_id,
            session_id=session.id,
            timestamp=iso(now),
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
            tool_calls=tools,
            cost_tokens=ct,
            cost_tools=tc,
            cost_total=add_dollars(ct, tc),
            metadata=dict(metadata or {}),
        )
        if self._leases is not None:
            event.lease_id = self._leases.spend(e.user_id, event.cost_total, model, event.total_tokens)
        self._count(e, session, model, event.total_tokens, event.cost_total)
        if plan is not None and e.loaded:
            e.called(model, event.cost_total, event.total_tokens)
        if self._queue.push("usage", event):
            e.pending += 1
            if not e.loaded and not e.unknown:
                # The service has not answered yet: priced (and held back) when it does.
                e.unpriced.append((event, session))
                self._unpriced_ids.add(event.id)
        return event

    def _price(self, e: UserEntry) -> None:
        """Prices the usage recorded before the plan was known, now that it is. Caller holds the lock."""
        plan = e.config
        for event, session in e.unpriced:
            self._unpriced_ids.discard(event.id)
            if plan is None:
                continue
            model = self._model(e, event.model)
            if event.model is not None and model is not None and model != event.model:
                raw = event.model
                left = e.tokens_by_model.get(raw, 0) - event.total_tokens
                if left <= 0:
                    e.tokens_by_model.pop(raw, None)
                else:
                    e.tokens_by_model[raw] = left
                e.tokens_by_model[model] = e.tokens_by_model.get(model, 0) + event.total_tokens
            event.model = model
            event.cost_tokens = token_cost(event.input_tokens, event.output_tokens, rate_of(model, plan))
            event.cost_tools = tools_cost(event.tool_calls, plan)
            event.cost_total = add_dollars(event.cost_tokens, event.cost_tools)
            self._count(e, session, model, 0, event.cost_total)
        e.unpriced = []

    @staticmethod
    def _count(e: UserEntry, session: Session, model: str | None, tokens: int, cost: float) -> None:
        # Money added as whole nano-dollars (money.py): 200 calls of $0.00125 are $0.25 exactly.
        e.period_cost = add_dollars(e.period_cost, cost)
        session.cost = add_dollars(session.cost, cost)
        if model is not None:
            e.tokens_by_model[model] = e.tokens_by_model.get(model, 0) + tokens
            e.cost_by_model[model] = add_dollars(e.cost_by_model.get(model, 0.0), cost)

    @staticmethod
    def _model(e: UserEntry, raw: str | None) -> str | None:
        if raw is None or raw == "":
            return None
        m = e.models.get(raw)
        if m is None:
            if not isinstance(raw, str):
                raise TypeError("model must be a string")
            m = normalize_model(raw, e.config)
            if len(e.models) >= MODEL_CACHE:
                e.models.clear()
            e.models[raw] = m
        return m

    def _sized(self, e: UserEntry, model: str | None, input_tokens: int | None, prompt: Any) -> int | None:
        """With leases, the input tokens when the call's reservation reads them: the lease's need and the
        check both do, so the prompt is sized once."""
        plan = e.config
        if input_tokens is not None or plan is None:
            return input_tokens
        if not plan.pre_call_estimate:
            with self._lock:
                if e.recent_calls(self._model(e, model)) is not None:
                    return input_tokens
        return estimate_tokens(prompt)

    def _lease_need(
        self, e: UserEntry, model: str | None, input_tokens: int | None, prompt: Any, max_output_tokens: int | None
    ) -> Any:
        assert self._leases is not None
        with self._lock:
            m = self._model(e, model)
            reserved = NOTHING if e.config is None else self._reservation(e, m, input_tokens, prompt, max_output_tokens)
            return self._leases.need(e, m, reserved)

    @staticmethod
    def _reservation(
        e: UserEntry, m: str | None, input_tokens: int | None, prompt: Any, max_output_tokens: int | None
    ) -> ReservationAmount:
        """What the call reserves (reservation_of): its estimate with pre_call_estimate, else the user's
        typical call. Caller holds the lock, and the user has a plan."""
        plan = e.config
        assert plan is not None
        return reservation_of(
            plan.pre_call_estimate,
            e.recent_calls(m),
            lambda: input_tokens if input_tokens is not None else estimate_tokens(prompt),
            max_output_tokens,
            plan.pre_call_buffer_tokens,
            lambda i, o: token_cost(i, o, rate_of(m, plan)),
        )

    # ---- QueueHooks ----

    def delivered(self, events: list[Event], kind: str, answer: Any) -> None:
        with self._lock:
            self._refused_key = None
            for ev in events:
                if isinstance(ev, UsageEvent):
                    ev.synced = True
                self._settled(ev.user_id if isinstance(ev, UsageEvent) else str(ev["user_id"]))

    def discarded(self, events: list[Event]) -> None:
        with self._lock:
            for ev in events:
                self._settled(ev.user_id if isinstance(ev, UsageEvent) else str(ev["user_id"]))

    def held(self, event: Event) -> bool:
        return isinstance(event, UsageEvent) and event.id in self._unpriced_ids

    def stalled(self, user_ids: set[str]) -> None:
        for uid in user_ids:
            e = self._users.get(uid) or (self._loading.get(uid) or (None, None))[0]
            if e is not None and e.refreshing is None:
                self._refresh(e, None)

    def warn(self, message: str, err: BaseException | None = None) -> None:
        self._warn(message, err)

    def key_refused(self, err: MeterAuthenticationError) -> None:
        self._key_refused(err)

    def misaddressed(self, err: MeterError) -> None:
        """Something answers at base_url, but not the API: a 404 of a delivery or of start()'s health check."""
        self._error(str(err), err)

    def _poll_changes(self) -> None:
        """One flush tick: asks the service what changed since the marker last seen (one request per
        client, whatever the number of users) and reloads only the users a plan update or a
        subscription change concerns, so a change reaches every running client within
        flush_interval. Users named by the previous answer are read once more here: a read that
        raced the change (another replica's short caches) may have been stale."""
        with self._lock:
            if self._polling_changes or time.monotonic() < self._changes_retry_at:
                return
            if not self._users and self._marker is not None:
                return
            again = [e for e in self._users.values() if e.recheck]
            for e in again:
                e.recheck = False
            self._polling_changes = True
            since = self._marker
        for e in again:
            self._refresh(e, None)
        try:
            c = self._transport.request("GET", "/config/changes" if since is None else f"/config/changes?since={since}")
            with self._lock:
                if self._marker != since or not isinstance(c, dict):
                    return
                # No marker before this answer (start() not called, or it failed): every cached view may
                # predate a change.
                every = since is None or bool(c.get("all"))
                plans = set(c.get("plan_ids") or ())
                users = set(c.get("user_ids") or ())
                changed = [
                    e
                    for e in self._users.values()
                    if every or e.user_id in users or (e.plan_id is not None and e.plan_id in plans)
                ]
                for e in changed:
                    e.recheck = True
                marker = c.get("marker")
                self._marker = marker if isinstance(marker, int) else since
            for e in changed:
                if self._leases is not None:
                    self._leases.renew(e.user_id)
                self._refresh(e, None, force=True)
        except MeterAPIError as err:
            if err.status in (401, 403):
                self._key_refused(err)
            elif err.status == 404:
                # A service from before the change marker (or a wrong base_url, which deliveries report).
                if self._changes_retry_at == 0:
                    self._warn(
                        "GET /config/changes answered 404; until it answers, plan changes reach this process only "
                        f"by its periodic reloads (refresh_interval {self.refresh_interval:g} s)",
                        err,
                    )
                self._changes_retry_at = time.monotonic() + self.refresh_interval
        except MeterError:
            pass  # network errors and 5xx: the next tick asks again; deliveries report the outage
        finally:
            with self._lock:
                self._polling_changes = False

    def _settled(self, user_id: str) -> None:
        e = self._users.get(user_id)
        if e is not None and e.pending > 0:
            e.pending -= 1

    def _tick(self) -> None:
        """On the delivery thread, every flush interval: the change poll (on a worker, so a slow answer
        never holds deliveries), and the idle sweep every min(refresh_interval, 60 s)."""
        now = time.monotonic()
        # flush() wakes the thread early too: still one poll per interval, not one per flush.
        if now - self._last_poll >= self.flush_interval * 0.9:
            self._last_poll = now
            with contextlib.suppress(RuntimeError):  # the executor is gone (interpreter exit)
                self._executor.submit(self._poll_changes)
        if now - self._last_sweep < min(60.0, self.refresh_interval):
            return
        self._last_sweep = now
        wall = time.time()
        with self._lock:
            for uid in list(self._users):
                e = self._users[uid]
                e.sessions.prune(wall, e.timeout)
                if e.refreshing is None and e.idle(wall):
                    del self._users[uid]
        if self._leases is not None:
            self._leases.release_idle()

    # ---- callbacks and logging ----

    def _fire(self, cbs: list[Callable[..., Any]], *args: Any) -> None:
        for cb in cbs:
            self._safely(cb, *args)

    def _safely(self, cb: Callable[..., Any], *args: Any) -> None:
        """A callback that raises stops neither the others nor the call; a coroutine runs on the running loop."""
        try:
            r = cb(*args)
        except Exception as err:
            self._warn("a callback raised", err)
            return
        if inspect.isawaitable(r):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                if inspect.iscoroutine(r):
                    r.close()
                self._warn("an async callback was called outside an event loop; it did not run")
                return
            task = asyncio.ensure_future(r, loop=loop)
            task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._warn("a callback raised", task.exception())

    def _warn(self, message: str, err: BaseException | None = None) -> None:
        try:
            self._logger.warning("[meter] %s%s", message, f": {err}" if err else "")
            if err is not None and self._on_error is not None:
                self._on_error(err)
        except Exception:
            pass  # a broken logger must not break a call

    def _error(self, message: str, err: BaseException) -> None:
        try:
            self._logger.error("[meter] %s", message)
            if self._on_error is not None:
                self._on_error(err)
        except Exception:
            pass

    # ---- fork ----

    def _after_fork_in_child(self) -> None:
        """The child of os.fork(): its own lock, connections, load workers and delivery thread; the
        parent's queue stays the parent's to send (nothing twice); its leases stay the parent's."""
        self._lock = threading.RLock()
        self._queue.clear_after_fork()
        self._queue.lock = self._lock
        self._transport.after_fork()
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="meter-load")
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
            self._leases.after_fork(self._executor)
        if not self._closed:
            self._delivery = DeliveryThread(self._queue, self.flush_interval, self._tick)


class _AsyncReserve:
    """What areserve() returns: awaitable, and an async context manager that releases on error."""

    __slots__ = ("_coro", "_res")

    def __init__(self, coro: Awaitable[Reservation]) -> None:
        self._coro = coro
        self._res: Reservation | None = None

    def __await__(self) -> Generator[Any, None, Reservation]:
        return self._coro.__await__()

    async def __aenter__(self) -> Reservation:
        self._res = await self._coro
        return self._res

    async def __aexit__(self, *exc: object) -> None:
        if self._res is not None:
            self._res.release()


def _forget(e: UserEntry, now: float) -> None:
    """The user is gone on the service: back to permissive defaults with empty counters."""
    e.service_user_id = None
    e.plan = "none"
    e.config = None
    e.loaded = False
    e.period_cost = 0.0
    e.tokens_by_model = {}
    e.cost_by_model = {}
    e.models.clear()
    e.recent = None
    e.sessions.clear(now)


def _non_negative(x: float) -> float:
    return 0.0 if x < 0 else x


# ---- process hooks: atexit and fork, over weak references (a dropped Meter is not kept alive) ----

_meters: weakref.WeakSet[Meter] = weakref.WeakSet()
_hooks_lock = threading.Lock()
_hooked = False


def _register(m: Meter) -> None:
    global _hooked
    with _hooks_lock:
        _meters.add(m)
        if _hooked:
            return
        _hooked = True
    atexit.register(_at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent, after_in_child=_after_fork_child)


def _at_exit() -> None:
    """Delivers what is queued, bounded by each meter's shutdown_timeout (a down service never hangs exit)."""
    for m in list(_meters):
        if not m._closed:
            with contextlib.suppress(Exception):
                m.shutdown()


_held_locks: list[threading.RLock] = []


def _before_fork() -> None:
    # The child's copy of each meter's state must not be caught half-written.
    for m in list(_meters):
        m._lock.acquire()
        _held_locks.append(m._lock)


def _after_fork_parent() -> None:
    while _held_locks:
        _held_locks.pop().release()


def _after_fork_child() -> None:
    _held_locks.clear()
    for m in list(_meters):
        m._after_fork_in_child()


def _resets_at(e: UserEntry, session: Session, result: GuardResult) -> float | None:
    """When a hard gate lifts by itself, where known (LimitExceededError.resets_at)."""
    reason = result.gate_reason
    if reason is None or reason == SESSION_UNAVAILABLE:
        return None
    if reason == "session_spend":
        return session.started_at + e.timeout if session is e.sessions.own else None
    return e.period_end_t


def _session_of(user_id: str, given: str | None) -> str | None:
    """The call's session: the one it names, else the enclosing ``meter.user()``'s for this user, else
    the library's own (None)."""
    if given is not None:
        return given
    ctx = _current.get()
    return ctx[1] if ctx is not None and ctx[0] == user_id else None
