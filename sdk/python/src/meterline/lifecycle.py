"""The steps of start(), refresh(), flush() and shutdown(), the delivery tick and the child of a fork: the layer
of the client core (core_state.py) above admission.py, as flows (flow.py) each shell performs."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from .admission import Admission
from .errors import MeterAPIError, MeterAuthenticationError, MeterEventsDroppedError
from .flow import Flow, Handle
from .portal import portal_token_flow
from .state import UserEntry
from .types import PortalToken, StartResult
from .validate import call_timeout, check_user


class Lifecycle(Admission):
    """The steps that do I/O, written once: Meter runs them blocking, AsyncMeter awaits them."""

    def _started(self, health: str, changes: Any) -> Flow[StartResult]:
        """What start() found, from the health check's word and the key check's answer (or its error)."""
        key_err = changes if isinstance(changes, BaseException) else None
        healthy = health == "ok"
        if health == "not_found":
            self._misaddressed((yield from self._wrong_address()))
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
            self._leases.renew(user_id, None if e.team is None else e.team.team_id)
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
        timeout = call_timeout("flush", timeout)
        with self._lock:
            self._queue.queued_after_close = False
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
        timeout = call_timeout("shutdown", timeout)
        with self._lock:
            if self._closed:
                closed_before = True
            else:
                closed_before = False
                self._closed = True
        if not closed_before:
            self._delivery.stop()
        # Background work not started yet (reloads, the change poll) would only delay what shutdown runs in the
        # background itself (lease releases) behind it, and at exit hold the process past shutdown_timeout.
        self._drop_queued()
        # Every shutdown (a serverless handler's each invocation): calls of the model-client wrappers still open are
        # settled before the delivery, as the TypeScript client's onShutdown hooks run on each.
        for cb in self._closing:
            self._safely(cb)
        with self._lock:
            self._queue.queued_after_close = False
        deadline = time.monotonic() + (self.shutdown_timeout if timeout is None else timeout)
        if self._leases is not None:
            # At most half of the time (a lease not given back lapses on the service at its end): the events
            # get the rest, however slow the lease route.
            yield from self._leases.release_all(max(0.1, (deadline - time.monotonic()) / 2))
        # Usage held for a plan not loaded yet is priced first, with at most half of what is left: the rest is the
        # delivery's.
        yield from self._load_held(time.monotonic() + max(0.0, deadline - time.monotonic()) / 2)
        while True:
            drained = yield from self._queue.drain(deadline, self._hopeless)
            # Closed under the lock that says the queue is empty: an event another thread pushed after the last
            # pass emptied it, and before this, is sent by another pass, not left unsent and uncounted (every
            # later one counts as queued after close, for the next flush() or shutdown(), or the exit).
            with self._lock:
                if not drained or self._queue.size == 0:
                    self._queue.closed = True
                    break
        if not drained:
            # Never raises: a refused key was logged as an error when it was met.
            why = " (the API key is refused)" if self._refused_key is not None else ""
            message = f"shutdown: {self._queue.size} events could not be delivered{why}"
            self._warn(message, MeterEventsDroppedError("undelivered", self._queue.size, message))
        return drained

    def _tick_interval(self) -> float:
        """How often the tick runs: as often as the most frequent of its parts, each of which keeps its own interval
        (deliveries and the change poll every flush interval, the idle sweep every min(refresh_interval, 60 s), the
        leases' every half of lease_idle), whatever the flush interval. A whole fraction of the flush interval, so
        that deliveries, gated on it, keep its pace (a tick of 0.6 of it would deliver every 1.2)."""
        every = min(self.flush_interval, 60.0, self.refresh_interval)
        if self._leases is not None:
            every = min(every, self._leases.settings.idle / 2)
        every = max(0.05, every)
        return self.flush_interval / max(1, math.ceil(self.flush_interval / every))

    def _tick(self) -> Flow[None]:
        """Every _tick_interval(), on the delivery thread or task: the change poll (in the background, so a slow
        answer never holds deliveries) and a delivery pass every flush interval, the idle sweep every
        min(refresh_interval, 60 s), the leases' every half of lease_idle."""
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
            # Leases every half of lease_idle: an idle one goes back within about lease_idle, and one under calls
            # that run on is renewed before it lapses.
            if self._leases is not None and now - self._last_lease_sweep >= self._leases.settings.idle / 2:
                self._last_lease_sweep = now
                yield from self._leases.release_idle()
            if self._queue.due() and now - self._last_pass >= self.flush_interval * 0.9:
                self._last_pass = now
                yield from self._queue.pass_once()
        except Exception as err:  # the thread or task must outlive any bug in one pass
            self._warn("delivery pass failed", err)

    def _exit_delivers(self) -> bool:
        """Whether the process's exit still has to deliver for this client: not shut down, or events queued after
        its last shutdown() or flush() (no thread sends them any more; what those could not deliver is not tried
        again, so exit stays within one shutdown_timeout)."""
        with self._lock:
            return not self._closed or self._queue.queued_after_close

    def _after_fork_in_child(self) -> None:
        """The child of os.fork(): its own lock, connections, load workers and delivery thread; the
        parent's queue stays the parent's to send (nothing twice); its leases stay the parent's."""
        self._lock = threading.RLock()
        # Nothing runs the parent's event loop here.
        self._callback_loop = None
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
