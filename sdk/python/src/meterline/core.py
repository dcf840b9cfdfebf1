"""What Meter and AsyncMeter share: the options, the client's state and every rule over it (lifecycle.py,
admission.py and the layers below them), the public methods that do no I/O; the steps of those that do are
flows (flow.py, lifecycle.py) each shell performs: Meter blocking over httpx.Client with a delivery thread,
AsyncMeter awaiting over httpx.AsyncClient with a delivery task. The awaitable calls (guard, reserve, record)
are written once here for both: AsyncMeter's, and Meter's a-prefixed ones."""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import threading
import time
import types
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Any, Concatenate, ParamSpec, TypeVar, cast
from urllib.parse import urlsplit

from .admission import LEASE_RETAKES, LEASE_ROUNDS, TEAM_WAITS, LeaseRetake
from .clock import now as clock_now
from .context import _current
from .core_state import GateCallback
from .errors import MeterValueError
from .flow import Flow, Wait
from .lifecycle import Lifecycle
from .process import register
from .queue import EventQueue
from .recording import Metadata
from .reservation import AsyncReserve, Reservation
from .state import UserEntry
from .teams import Teams
from .types import (
    CreditsEvent,
    GuardResult,
    MeterStats,
    SessionStartState,
    UsageEvent,
    UserState,
)
from .validate import (
    check_estimate,
    check_session_id,
    check_usage,
    check_user,
    flag,
    positive,
    positive_int,
)

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
            raise MeterValueError("Meter: api_key is required (or set METER_API_KEY)")
        if not base_url:
            raise MeterValueError(
                "Meter: base_url is required (or set METER_BASE_URL), e.g. https://meter.example.com/api/v1"
            )
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise MeterValueError(f"Meter: base_url must be an http(s) URL, got {base_url}")
        if parts.path.rstrip("/") == "":
            # Every request would 404 and every event be dropped: say what to fix instead.
            raise MeterValueError(
                f"Meter: base_url {base_url} has no API path; the service's API is under /api/v1: "
                f"use base_url={base_url.rstrip('/')}/api/v1"
            )
        self.blocking = flag("blocking", blocking)
        self.fail_closed = flag("fail_closed", fail_closed)
        flag("leases", leases)
        self.flush_interval = positive("flush_interval", flush_interval)
        self.refresh_interval = positive("refresh_interval", refresh_interval)
        self.startup_timeout = positive("startup_timeout", startup_timeout)
        self.shutdown_timeout = positive("shutdown_timeout", shutdown_timeout)
        self.request_timeout = positive("request_timeout", request_timeout)
        max_queue = positive_int("max_queue_size", max_queue_size)
        # The service takes at most 10,000 events a batch.
        max_batch = positive_int("max_batch_size", max_batch_size, 10_000)
        self._logger = logger or log
        self._on_error = on_error
        self._open(base_url, api_key)
        self._lock = threading.RLock()
        self._users = {}
        self._teams = Teams()
        self._loading = {}
        self._misaddressed_said = False
        self._api_answer = None
        self._manual_ids = set()
        self._unpriced_ids = set()
        self._unpriced_models = set()
        self._unpriced_said = []
        self._soft = []
        self._hard = []
        self._usage = []
        self._session_start = []
        self._closing = []
        self._credits_low = []
        self._credits_depleted = []
        self._credits_expired = []
        self._callback_loop = None
        self._marker = None
        self._polling_changes = False
        self._changes_retry_at = 0.0
        self._key_refused_logged = False
        self._refused_key = None
        self._last_poll = 0.0
        self._last_pass = time.monotonic()
        self._closed = False
        self._last_sweep = time.monotonic()
        self._last_lease_sweep = time.monotonic()
        self._queue = EventQueue(self._http.base, self._lock, max_queue, max_batch, self, self._http.timeout)
        self._leases = None
        if leases:
            from .lease_books import LeaseSettings
            from .leases import Leases

            if lease_fallback not in ("slice", "open"):
                raise MeterValueError(f'Meter: lease_fallback must be "slice" or "open", got {lease_fallback!r}')
            self._leases = Leases(
                LeaseSettings(
                    ttl=positive("lease_ttl", lease_ttl),
                    calls=positive_int("lease_calls", lease_calls),
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
        """Runs when a call reaches a dimension's soft_gate_at (below hard_gate_at); the call still runs.
        Callbacks of one kind fire in registration order; one that raises is logged and passed to ``on_error``, and
        stops neither the others nor the call. There is no unregister."""
        self._registered(self._soft, cb)

    def on_hard_gate(self, cb: GateCallback) -> None:
        """Runs when a call reaches a dimension's hard_gate_at, before ``LimitExceededError`` is raised (with
        ``blocking=False``, before the call proceeds). Callbacks of one kind fire in registration order; one that
        raises is logged and passed to ``on_error``, and stops neither the others nor the call. There is no
        unregister."""
        self._registered(self._hard, cb)

    def on_usage(self, cb: Callable[[UsageEvent], Any]) -> None:
        """Runs after every metered call and manual event, with its usage event. Callbacks of one kind fire in
        registration order; one that raises is logged and passed to ``on_error``, and stops neither the others nor
        the call. There is no unregister."""
        self._registered(self._usage, cb)

    def on_session_start(self, cb: Callable[[SessionStartState], Any]) -> None:
        """Runs when a user's session view is first loaded (user, plan, billing period). Callbacks of one kind fire
        in registration order; one that raises is logged and passed to ``on_error``, and stops neither the others
        nor the call. There is no unregister."""
        self._registered(self._session_start, cb)

    def on_credits_low(self, cb: Callable[[CreditsEvent], Any]) -> None:
        """Prepaid credits: ``cb`` runs once each time a user's balance, as this process counts it, falls below the
        plan's credits_low_at (armed again when a grant lifts it back): the moment to charge the customer and post a
        grant (auto top-up)."""
        self._registered(self._credits_low, cb)

    def on_credits_depleted(self, cb: Callable[[CreditsEvent], Any]) -> None:
        """Prepaid credits: ``cb`` runs when a user's balance goes from above 0 to 0 or below."""
        self._registered(self._credits_depleted, cb)

    def on_credits_expired(self, cb: Callable[[CreditsEvent], Any]) -> None:
        """Prepaid credits: ``cb`` runs when a grant of a user expires with money left (at its expires_at, seen
        within the client's sweep or at the user's next call after it)."""
        self._registered(self._credits_expired, cb)

    def on_shutdown(self, cb: Callable[[], Any]) -> None:
        """Runs when shutdown() starts, before its final delivery (integrations settle calls still open)."""
        self._registered(self._closing, cb)

    def state(self, user_id: str) -> UserState | None:
        """The user's cached state; None before the user's first guard/record."""
        with self._lock:
            e = self._users.get(user_id)
            return None if e is None else e.snapshot(clock_now())

    @contextlib.contextmanager
    def user(self, user_id: str, session_id: str | None = None) -> Iterator[None]:
        """Sets the user (and optionally the session) of this context for the model-client integrations."""
        check_user(user_id)
        check_session_id("user()", session_id)
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
                busy=q.busy,
                leased_users=None if self._leases is None else len(self._leases.books),
                leased_teams=None if self._leases is None else len(self._leases.teams),
                lease_waits=None if self._leases is None else self._leases.waits,
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
        check_estimate(model, session_id, input_tokens, max_output_tokens, metadata)
        e = self._ready(user_id)
        if e is None:
            return None
        input_tokens, need = self._lease_plan(e, model, input_tokens, prompt, max_output_tokens)
        if need is not None:
            return None
        return self._held(self._admit(e, model, session_id, input_tokens, prompt, metadata, True, max_output_tokens))

    # ---- the calls that wait for the user's view, written once for both shells ----
    # guard() and record() are synchronous bodies: Meter's own methods, run at once for a ready user. Their
    # awaitable forms (AsyncMeter's, Meter's a-prefixed ones) are made by _after_load(). reserve() and refresh()
    # wait more than once, so they are flows (flow.py) each shell performs.

    def _entry(self, user_id: str) -> UserEntry:
        """The user's entry for a call: ready as is, or the one an awaitable call just waited for (_after_load);
        else, in a blocking call, its view is waited for (_load)."""
        check_user(user_id)
        e = self._ready(user_id)
        if e is not None:
            return e
        waited = _waited.get()
        if waited is None or waited[0] != user_id:
            return self._run(self._load(user_id))
        if waited[1] is None:
            raise _Unloaded
        return waited[1]

    def _entry_flow(self, user_id: str) -> Flow[UserEntry]:
        check_user(user_id)
        e = self._ready(user_id)
        return e if e is not None else (yield from self._load(user_id))

    def _load(self, user_id: str) -> Flow[UserEntry]:
        """The user's entry, its view waited for up to startup_timeout, and not at all while the service is known
        to be unreachable: then the user starts with permissive defaults (or fail_closed) until it arrives."""
        e, h, rollover = self._begin_load(user_id)
        if self._http.reachable:
            yield Wait(h, self.startup_timeout)
        return self._end_load(e, rollover)

    def _guard(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: Metadata = None,
        max_output_tokens: int | None = None,
    ) -> GuardResult:
        """Checks a coming call. Raises LimitExceededError on a hard gate when blocking."""
        check_estimate(model, session_id, input_tokens, max_output_tokens, metadata)
        admitted = self._admit(
            self._entry(user_id), model, session_id, input_tokens, prompt, metadata, False, max_output_tokens
        )
        return self._after_gate(*admitted)

    def _record_call(
        self,
        user_id: str,
        model: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        tool_calls: list[str] | None = None,
        session_id: str | None = None,
        metadata: Metadata = None,
    ) -> UsageEvent:
        """Meters a call that already ran."""
        check_user(user_id)
        check_usage(input_tokens, output_tokens, tool_calls, metadata, session_id, model)
        return self._record(self._entry(user_id), model, input_tokens, output_tokens, tool_calls, session_id, metadata)

    def _reserve(
        self,
        user_id: str,
        model: str | None = None,
        session_id: str | None = None,
        input_tokens: int | None = None,
        prompt: Any = None,
        metadata: Metadata = None,
        max_output_tokens: int | None = None,
    ) -> Flow[Reservation]:
        """guard() and the call's reservation held against the limits in the same step: its estimate with
        ``pre_call_estimate``, else the user's typical call of the model (an estimate on the first call)."""
        check_estimate(model, session_id, input_tokens, max_output_tokens, metadata)
        e = yield from self._entry_flow(user_id)
        input_tokens, need = self._lease_plan(e, model, input_tokens, prompt, max_output_tokens)
        leases = self._leases
        with contextlib.ExitStack() as stay:
            # The user's lease book stays from the first wait to the hold taken (Leases.waiting).
            staying = need is not None and leases is not None
            if staying:
                assert leases is not None
                stay.enter_context(leases.waiting(e))
            rounds = LEASE_ROUNDS
            team_waits = TEAM_WAITS
            retakes = LEASE_RETAKES
            waited = False
            while True:
                while need is not None and rounds > 0:
                    assert leases is not None
                    asking = leases.asking(e, need)
                    if asking is None:
                        break
                    if not waited:
                        leases.count_wait()
                        waited = True
                    request, asked = asking
                    # Another member's request asking for the team's slices may cover this call; when it does not,
                    # the call still has its own rounds to ask (one member's wait must not cost another member its ask).
                    if asked == "team" and team_waits > 0:
                        team_waits -= 1
                    else:
                        rounds -= 1
                    # A request on its way before this call came asked for what the slices lacked then: whatever it
                    # got, the next round asks for this call (refused only once its own request got nothing).
                    if not (yield Wait(request, None)) and asked == "own":
                        break
                    # Sized anew after each wait: a call counts in the windows of the time it is admitted, and a wait
                    # across a window's end would otherwise ask for the window that ended.
                    need = self._lease_need(e, model, input_tokens, prompt, max_output_tokens)
                # Covered when its waits ended, the call may still find its slice taken by a call admitted first.
                retake = leases is not None and retakes > 0 and (need is None or leases.covers(e, need))
                try:
                    admitted = self._admit(
                        e, model, session_id, input_tokens, prompt, metadata, True, max_output_tokens, retake
                    )
                except LeaseRetake:
                    assert leases is not None
                    # Within its rounds: a call waits for the request in flight and one more at most.
                    retakes -= 1
                    need = self._lease_need(e, model, input_tokens, prompt, max_output_tokens)
                    if need is not None and not staying:
                        staying = True
                        stay.enter_context(leases.waiting(e))
                    continue
                return self._held(admitted)

    def _refresh_user(self, user_id: str) -> Flow[bool]:
        """Reloads the user's session view now (a plan or subscription just changed). True when it loaded."""
        e, h = self._refresh_now(user_id)
        if e is None or h is None:
            return (yield from self._entry_flow(user_id)).loaded
        yield Wait(h, self.request_timeout + 1)
        return h.done() and e.loaded and not e.load_failed


class _Unloaded(Exception):
    """An awaitable call's body met a user whose view is not ready: _after_load awaits it and runs the body again."""


# What an awaitable call hands the body it runs (_after_load): the user it is for, and None until the user's view
# was waited for, then the entry. None outside one: a blocking call waits itself.
_waited: ContextVar[tuple[str, UserEntry | None] | None] = ContextVar("meterline_waited", default=None)

P = ParamSpec("P")
T = TypeVar("T")


F = TypeVar("F", bound=Callable[..., Any])


def public(method: F, flow: Callable[..., Any], name: str) -> F:
    """What ``help()`` and editors show of a public method made from a core flow: its own name, the flow's
    docstring, and the flow's parameters returning what the method returns (``Flow[T]`` is how the core computes
    a T), not ``_flow(...) -> Flow[T]``."""
    sig = inspect.signature(flow)
    returns = sig.return_annotation
    if isinstance(returns, str) and returns.startswith("Flow[") and returns.endswith("]"):
        returns = returns[len("Flow[") : -1]
    method.__name__ = method.__qualname__ = name
    setattr(method, "__signature__", sig.replace(return_annotation=returns))  # noqa: B010 (not a declared attribute)
    return method


def renamed(call: F, name: str) -> F:
    """A call under another public name (``Meter.guard`` is ``MeterCore._guard``, ``Meter.aguard`` AsyncMeter's
    ``guard``): a copy of the function, so that ``help()`` names it without a wrapper's frame on a call this hot."""
    f: Any = call
    copy = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    copy.__dict__.update(f.__dict__)  # the signature public() gave it
    copy.__kwdefaults__ = f.__kwdefaults__
    copy.__doc__ = f.__doc__
    copy.__annotations__ = f.__annotations__
    copy.__qualname__ = name
    copy.__module__ = f.__module__
    return cast(F, copy)


def _after_load(
    call: Callable[Concatenate[MeterCore, P], T], name: str
) -> Callable[Concatenate[MeterCore, P], Awaitable[T]]:
    """The awaitable form of a call on a user (its first argument, ``user_id``): run at once when the user's view is
    ready; else its load is awaited on the event loop (never blocking it) and the call run again with the entry it
    gave. A user id that is not a string never gets that far: the call refuses it first."""

    @functools.wraps(call)
    async def run(self: MeterCore, /, *args: P.args, **kwargs: P.kwargs) -> T:
        self._on_loop()
        who = args[0] if args else kwargs.get("user_id")
        user_id = who if isinstance(who, str) else ""
        token = _waited.set((user_id, None))
        try:
            try:
                return call(self, *args, **kwargs)
            except _Unloaded:
                _waited.set((user_id, await self._run_async(self._load(user_id))))
                return call(self, *args, **kwargs)
        finally:
            _waited.reset(token)

    return public(run, call, name)


def awaiting(
    flow: Callable[Concatenate[MeterCore, P], Flow[T]], name: str
) -> Callable[Concatenate[MeterCore, P], Awaitable[T]]:
    """A method that awaits the core's flow on the event loop."""

    @functools.wraps(flow)
    async def run(self: MeterCore, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run_async(flow(self, *args, **kwargs))

    return public(run, flow, name)


def _reserving(
    flow: Callable[Concatenate[MeterCore, P], Flow[Reservation]], name: str
) -> Callable[Concatenate[MeterCore, P], AsyncReserve]:
    """``await meter.reserve(...)`` or ``async with meter.reserve(...) as r`` (Meter: ``areserve``)."""

    @functools.wraps(flow)
    def run(self: MeterCore, /, *args: P.args, **kwargs: P.kwargs) -> AsyncReserve:
        return AsyncReserve(self._run_async(flow(self, *args, **kwargs)))

    run = public(run, flow, name)
    setattr(run, "__signature__", inspect.signature(run).replace(return_annotation="AsyncReserve"))  # noqa: B010
    return run


# The awaitable calls: AsyncMeter's guard/reserve/record/refresh, Meter's aguard/areserve/arecord.
guard_async = _after_load(MeterCore._guard, "guard")
record_async = _after_load(MeterCore._record_call, "record")
reserve_async = _reserving(MeterCore._reserve, "reserve")
refresh_async = awaiting(MeterCore._refresh_user, "refresh")
