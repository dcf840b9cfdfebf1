"""The bounded delivery queue of usage and gate events, and its one daemon thread. New events are
dropped when it is full. Batches are retried with backoff on network errors, 429 and 5xx and never
on other 4xx; event ids make a retried batch count once on the service. Passes are flows (flow.py):
the delivery thread, the delivery task and flush() run the same ones."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import fields
from typing import Any, Literal, Protocol

from .errors import MeterAPIError, MeterAuthenticationError, MeterError, MeterEventsDroppedError
from .flow import Flow, Request, Sleep
from .transport import address_hint, backoff, retryable
from .types import UsageEvent
from .validate import json_copy

# How soon a pass that found only held events looks again (s).
_HELD_RETRY = 0.25
# How soon a pass that found another one running looks again (s).
_BUSY_RETRY = 0.01


class QueuedUsage(UsageEvent):
    """A usage event as the queue holds and sends it: the library's own. Callers get ``view`` (record's and
    commit's return, on_usage's argument), a copy with its own metadata and tool_calls, so what a caller or a
    callback changes in it afterwards is not sent. What the library learns later, the price of usage held for its
    plan (shown()) and the service's acknowledgment (synced), is written to both."""

    __slots__ = ("view",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        own = {f.name: getattr(self, f.name) for f in fields(UsageEvent)}
        self.view = UsageEvent(**{**own, "tool_calls": list(self.tool_calls), "metadata": json_copy(self.metadata)})

    def shown(self) -> None:
        """What the library set since (a price, the lease, synced), written to the caller's copy."""
        v = self.view
        v.model = self.model
        v.cost_tokens = self.cost_tokens
        v.cost_tools = self.cost_tools
        v.cost_total = self.cost_total
        v.lease_id = self.lease_id
        v.synced = self.synced


Event = UsageEvent | dict[str, Any]
# What sending the head of one list came to (EventQueue._batch).
BatchOutcome = Literal["sent", "held", "failed"]


class QueueHooks(Protocol):
    def _delivered(self, events: list[Event], kind: str, answer: Any) -> None: ...
    def _discarded(self, events: list[Event]) -> None: ...
    def _event_held(self, event: Event) -> bool: ...
    def _stalled(self, user_ids: set[str]) -> None: ...
    def _warn(self, message: str, err: BaseException | None = None) -> None: ...
    def _misaddressed(self, err: MeterError) -> None: ...
    def _key_refused(self, err: MeterAuthenticationError) -> None: ...


def _named_events(err: MeterError, head: list[Event]) -> list[Event]:
    """The events of ``head`` a 422 names ("body/<index>/<field> ..." in its detail)."""
    if not isinstance(err, MeterAPIError) or err.status != 422:
        return []
    named = {int(m) for m in re.findall(r"(?:^|; )body/(\d+)/", err.detail)}
    return [e for i, e in enumerate(head) if i in named]


def _user_of(e: Event) -> str:
    return e.user_id if isinstance(e, UsageEvent) else str(e["user_id"])


class EventQueue:
    def __init__(
        self,
        base: str,
        lock: threading.RLock,
        max_size: int,
        max_batch: int,
        hooks: QueueHooks,
        request_timeout: float = 10.0,
    ) -> None:
        self.base = base
        self.lock = lock
        self.max_size = max_size
        self.max_batch = max_batch
        # A batch request's own timeout, unless a drain's deadline leaves less.
        self.request_timeout = request_timeout
        self.hooks = hooks
        self.usage: list[Event] = []
        self.gates: list[Event] = []
        self.sent = 0
        self.dropped = 0
        self.rejected = 0
        # Batches answered 429 (the service is busy): kept and sent again after Retry-After.
        self.busy = 0
        self.failures = 0
        self.next_attempt = 0.0
        self.warned_full = False
        # A drop logged under the client's lock, for on_error once the caller has released it (take_unreported).
        self.unreported: MeterEventsDroppedError | None = None
        # Set after shutdown's delivery: a later event is said once (the next flush() or shutdown() sends it).
        self.closed = False
        self.warned_closed = False
        # Events were queued after shutdown(): the next shutdown, or the interpreter's exit, sends them.
        self.queued_after_close = False
        # Events a batch holds at most now: halved by each 413 (too large for the service), whole again once
        # the queue empties.
        self.batch_limit = max_batch
        # One pass at a time, whoever runs it (the thread or task, flush(), shutdown()): a flag, not a lock,
        # since a pass on the event loop must never block it.
        self.passing = False

    @property
    def held(self) -> int:
        """Usage events waiting for their user's plan before they can be priced and sent."""
        with self.lock:
            return sum(1 for e in self.usage if self.hooks._event_held(e))

    @property
    def size(self) -> int:
        return len(self.usage) + len(self.gates)

    def push(self, kind: str, event: Event) -> bool:
        """False when full and the event was dropped (counted; logged once per full spell). Caller holds the lock."""
        if self.closed:
            self.queued_after_close = True
        if self.closed and not self.warned_closed:
            # No thread sends it any more: the next flush() or shutdown() does (a serverless handler's next call), or
            # the process's exit.
            self.warned_closed = True
            self.hooks._warn(
                "an event was recorded after shutdown(): it waits for the next flush() or shutdown(), or the "
                "process's exit, which sends it"
            )
        if len(self.usage) + len(self.gates) >= self.max_size:
            self.dropped += 1
            if not self.warned_full:
                self.warned_full = True
                message = f"event queue full ({self.max_size}); new events are dropped until it drains"
                self.hooks._warn(message)
                self.unreported = MeterEventsDroppedError("queue_full", 1, message)
            return False
        (self.usage if kind == "usage" else self.gates).append(event)
        return True

    def clear_after_fork(self) -> None:
        """A forked child: what is queued is the parent's to send."""
        self.lock = threading.RLock()
        self.passing = False
        self.usage = []
        self.gates = []
        self.failures = 0
        self.next_attempt = 0.0
        self.unreported = None

    def take_unreported(self) -> MeterEventsDroppedError | None:
        """The drop push() logged and on_error has not heard of yet (push runs under the client's lock, where a
        callback that calls the client, or waits for a thread that does, would hold every caller up)."""
        with self.lock:
            err, self.unreported = self.unreported, None
            return err

    def due(self) -> bool:
        return self.size > 0 and time.monotonic() >= self.next_attempt

    def drain(self, deadline: float, hopeless: Callable[[], bool] = lambda: False) -> Flow[bool]:
        """Passes until empty or ``deadline`` (time.monotonic), waiting out backoffs in between; stops
        early when ``hopeless()`` says no retry can succeed (a refused key)."""
        while True:
            if (yield from self.pass_once(deadline)):
                return True
            now = time.monotonic()
            if now >= deadline or hopeless():
                return False
            # A backoff that ends at or after the deadline: no attempt fits in what is left (one started at the
            # deadline would only be cut off by it).
            if self.next_attempt >= deadline:
                return False
            yield Sleep(max(self.next_attempt - now, 0.01))

    def pass_once(self, deadline: float | None = None) -> Flow[bool]:
        """One pass over the queue; True when it emptied it. Waits for a pass under way until ``deadline``."""
        while not self._claim():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            yield Sleep(_BUSY_RETRY)
        try:
            while self.size > 0:
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                # Gate events go out even when every queued usage event waits for its user's plan, but
                # not when the usage batch was turned away (an outage, a 429 and its Retry-After): the
                # gate batch waits out the same backoff, which its success would end.
                usage = yield from self._batch("usage", self.usage, deadline)
                if usage == "failed":
                    return False
                gates = yield from self._batch("gate", self.gates, deadline)
                if usage != "sent" or gates != "sent":
                    return False
            with self.lock:
                self.warned_full = False
                self.batch_limit = self.max_batch
            return True
        finally:
            with self.lock:
                self.passing = False

    def _claim(self) -> bool:
        with self.lock:
            if self.passing:
                return False
            self.passing = True
            return True

    def _batch(self, kind: str, lst: list[Event], deadline: float | None = None) -> Flow[BatchOutcome]:
        """Sends the head of one list: "sent" (or dropped as refused, or to be sent in halves), "held" (every
        event waits for its user's plan) or "failed" (retryable; backoff set)."""
        head: list[Event] = []
        stalled: set[str] = set()
        with self.lock:
            if not lst:
                return "sent"
            for e in lst:
                if self.hooks._event_held(e):
                    stalled.add(_user_of(e))
                else:
                    head.append(e)
                    if len(head) >= self.batch_limit:
                        break
            wire = [e.wire() if isinstance(e, UsageEvent) else e for e in head]
        if not head:
            self.hooks._stalled(stalled)
            self.next_attempt = time.monotonic() + _HELD_RETRY
            return "held"
        try:
            timeout = None if deadline is None else max(0.05, min(self.request_timeout, deadline - time.monotonic()))
            answer = yield Request("POST", "/events/batch" if kind == "usage" else "/gate-events/batch", wire, timeout)
        except MeterError as err:
            # Too large for the service (its 10 MiB a batch): sent again in halves; one event too large on
            # its own is refused below like any refused event.
            if isinstance(err, MeterAPIError) and err.status == 413 and len(head) > 1:
                self.batch_limit = (len(head) + 1) // 2
                return "sent"
            # 404 on a batch route is a wrong base_url, not a bad event: keep the events and retry, so
            # they are delivered once the address is fixed (and the process restarted, or a proxy repaired).
            misaddressed = isinstance(err, MeterAPIError) and err.status == 404
            if misaddressed and self.failures == 0:
                assert isinstance(err, MeterAPIError)
                path = "/events/batch" if kind == "usage" else "/gate-events/batch"
                self.hooks._misaddressed(
                    MeterAPIError(
                        404,
                        f"POST {self.base}{path} answered 404 ({err.detail}): {address_hint(self.base)}; "
                        "events stay queued until it answers",
                    )
                )
            # A refused key is fixed by its owner, not by time: the events wait for it, loudly.
            refused = isinstance(err, MeterAuthenticationError)
            if refused:
                assert isinstance(err, MeterAuthenticationError)
                self.hooks._key_refused(err)
            if misaddressed or refused or retryable(err):
                if isinstance(err, MeterAPIError) and err.status == 429:
                    self.busy += 1
                self.failures += 1
                self.next_attempt = time.monotonic() + backoff(self.failures, err)
                # Once per outage, not once per attempt.
                if self.failures == 1 and not misaddressed and not refused:
                    self.hooks._warn(f"delivering {kind} events failed; retrying with backoff", err)
                return "failed"
            # A 422 that names events refuses only those: the rest of the batch goes again.
            dropped = _named_events(err, head) or head
            with self.lock:
                self._remove(lst, dropped)
                self.rejected += len(dropped)
            self.hooks._discarded(dropped)
            self.hooks._warn(f"the service refused {len(dropped)} {kind} events; they are dropped", err)
            return "sent"
        with self.lock:
            self._remove(lst, head)
            self.failures = 0
            self.next_attempt = 0.0
            self.sent += len(head)
        self.hooks._delivered(head, kind, answer)
        return "sent"

    @staticmethod
    def _remove(lst: list[Event], sent: list[Event]) -> None:
        gone = {id(e) for e in sent}
        lst[:] = [e for e in lst if id(e) not in gone]
