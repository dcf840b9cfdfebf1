"""The fields of a client, Meter's and AsyncMeter's alike, set by ``MeterCore.__init__`` (core.py). The core
is one class built in layers, each in its module and each using the ones below it: reporting.py (logging and
the product's callbacks), recording.py (what calls used), users.py (loading users' views, the change poll),
admission.py (the check of a call), lifecycle.py (the steps of start, flush and shutdown); core.py puts them
together, and meter.py / async_meter.py add the I/O."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .flow import Flow, Handle
from .queue import EventQueue
from .state import UserEntry
from .teams import Teams
from .types import CreditsEvent, GateContext, GuardResult, SessionStartState, UsageEvent

if TYPE_CHECKING:
    from .delivery import Delivery
    from .errors import MeterAuthenticationError
    from .leases import Leases
    from .transport import _Http

GateCallback = Callable[[GuardResult, GateContext], Any]
T = TypeVar("T")


class CoreState:
    blocking: bool
    fail_closed: bool
    flush_interval: float
    refresh_interval: float
    startup_timeout: float
    shutdown_timeout: float
    request_timeout: float
    _logger: logging.Logger
    _on_error: Callable[[BaseException], Any] | None
    _lock: threading.RLock
    _users: dict[str, UserEntry]
    _teams: Teams
    # First loads in flight: the entry, and the load every first caller waits for.
    _loading: dict[str, tuple[UserEntry, Handle]]
    # A session load met a 404 where the API does not answer: said once.
    _misaddressed_said: bool
    # The last /health answer after a session's 404: (monotonic seconds, word).
    _api_answer: tuple[float, str] | None
    _manual_ids: set[str]
    _unpriced_ids: set[str]
    _unpriced_models: set[str]
    _unpriced_said: list[str]
    _soft: list[GateCallback]
    _hard: list[GateCallback]
    _usage: list[Callable[[UsageEvent], Any]]
    _session_start: list[Callable[[SessionStartState], Any]]
    _closing: list[Callable[[], Any]]
    _credits_low: list[Callable[[CreditsEvent], Any]]
    _credits_depleted: list[Callable[[CreditsEvent], Any]]
    _credits_expired: list[Callable[[CreditsEvent], Any]]
    # The event loop of the last callback registered or awaitable call made on one: where an async callback fired
    # from a thread that runs no loop runs (reporting.py).
    _callback_loop: asyncio.AbstractEventLoop | None
    # The product's change marker last seen (GET /config/changes); None until the first answer.
    _marker: int | None
    _polling_changes: bool
    # The change route answered 404 (a service from before it, or a wrong address): asked again only after this.
    _changes_retry_at: float
    _key_refused_logged: bool
    # The service refused the key, and has accepted nothing since: what flush() raises.
    _refused_key: MeterAuthenticationError | None
    _last_poll: float
    # When the tick last made a delivery pass (it runs more often than flush_interval with leases).
    _last_pass: float
    _closed: bool
    _last_sweep: float
    _last_lease_sweep: float
    _queue: EventQueue
    _leases: Leases | None
    _delivery: Delivery

    # ---- what each shell provides (meter.py, async_meter.py) ----

    @property
    def _http(self) -> _Http:
        """The transport (its base address and reachability; the I/O is the shell's)."""
        raise NotImplementedError

    def _spawn(self, flow: Flow[Any]) -> Handle:
        """Runs a flow in the background: on the load workers (Meter) or as a task on the event loop (AsyncMeter)."""
        raise NotImplementedError

    def _run(self, flow: Flow[T]) -> T:
        """Performs a flow, blocking (Meter)."""
        raise NotImplementedError

    async def _run_async(self, flow: Flow[T]) -> T:
        """Performs a flow on the event loop: AsyncMeter every step there; Meter's awaitable calls wait there for
        its workers, and send a request from a thread."""
        raise NotImplementedError

    def _open(self, base_url: str, api_key: str) -> None:
        """Makes the transport (and what runs flows in the background)."""
        raise NotImplementedError

    def _start_delivery(self) -> None:
        raise NotImplementedError

    def _reopen(self) -> None:
        """In a forked child: fresh connections and background workers."""
        raise NotImplementedError

    def _on_loop(self) -> None:
        """An awaitable call runs on an event loop: async callbacks fired from threads run there (reporting.py), and
        AsyncMeter starts its delivery task there."""
        self._callback_loop = asyncio.get_running_loop()

    def _drop_queued(self) -> None:
        """shutdown() and the exit: background flows not started yet are dropped (Meter's load workers; AsyncMeter's
        tasks end with their loop)."""

    def _close_at_exit(self) -> None:
        raise NotImplementedError
