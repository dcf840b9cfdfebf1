"""What calls used: priced under the user's plan, counted in the period and the session, spent from the lease,
queued for delivery and announced to on_usage; a reservation settled or given back; an event of
record_manual(); and what deliveries settle. Usage recorded before the plan is known is held back and priced
when it loads."""

from __future__ import annotations

import uuid
from typing import Any

from .clock import now as clock_now
from .context import _current
from .errors import MeterError, MeterTypeError
from .flow import Flow, Request, Sleep
from .money import add_dollars
from .periods import iso, parse_time
from .pricing import normalize_model, rate_of, token_cost, tools_cost
from .queue import Event, QueuedUsage
from .reporting import Reporting
from .reservation import Hold
from .state import UserEntry, hold_team, hold_windows
from .transport import backoff, retryable
from .types import ManualEvent, Rate, UsageEvent
from .user_sessions import Session
from .validate import check_manual, check_usage, check_user, own_metadata

MANUAL_ATTEMPTS = 3
MODEL_CACHE = 256
MANUAL_IDS = 10_000

Metadata = dict[str, Any] | None


# Plans and models already warned of as unpriced: said once each, at most this many.
UNPRICED_WARNINGS = 1000


class Recording(Reporting):
    def _note_unpriced(self, e: UserEntry, model: str | None, tokens: int, rate: Rate | None) -> None:
        """Tokens of a model the plan prices none of cost $0 (SPEC: no rate, no default rate) and count toward no
        spend cap: right for a plan that prices nothing (token caps only), a silent leak when the plan prices other
        models (a quick start's "gpt-4.1" plan called with "gpt-4o"). Noted once per plan and model, under the lock;
        said by _say_unpriced after it."""
        plan = e.config
        if plan is None or model is None or tokens == 0 or not plan.cost_rates or rate is not None:
            return
        key = f"{e.plan_id or ''}\0{model}"
        if key in self._unpriced_models or len(self._unpriced_models) >= UNPRICED_WARNINGS:
            return
        self._unpriced_models.add(key)
        priced = list(plan.cost_rates)
        self._unpriced_said.append(
            f'model "{model}" has no rate in {e.user_id}\'s plan (its cost_rates price {", ".join(priced[:3])}'
            f"{', ...' if len(priced) > 3 else ''}) and the plan has no default_cost_rate: its tokens cost $0 and "
            "count toward no spend cap; add the model to the plan's cost_rates"
        )

    def _say_unpriced(self) -> None:
        """The warnings _note_unpriced noted, logged without the lock."""
        if not self._unpriced_said:
            return
        with self._lock:
            said, self._unpriced_said = self._unpriced_said, []
        for message in said:
            self._warn(message)

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
        now = clock_now()
        # Copied before the lock: concurrent recorders do not wait on each other's JSON round trip.
        meta = own_metadata(metadata)
        with self._lock:
            session = e.sessions.at(session_of(e.user_id, session_id), now, e.timeout)
            event = self._meter(e, session, self._model(e, model), input_tokens, output_tokens, tool_calls, meta, now)
            news = e.credit_news(now)
        self._report_drops()
        self._say_unpriced()
        self._fire(self._usage, event)
        self._fire_credits(news)
        return event

    def _manual(
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
    ) -> Flow[ManualEvent]:
        """POST /events, priced by the service unless ``cost`` is given. Sent up to 3 times in all (2 retries) on
        network errors, 429 and 5xx with one idempotency key, then raised (MeterAPIError / MeterNetworkError)."""
        check_user(user_id)
        check_manual(
            cost, input_tokens, output_tokens, description, tool_calls, metadata, session_id, model, idempotency_key
        )
        session_id = session_of(user_id, session_id)
        body: dict[str, Any] = {
            "user_id": user_id,
            "idempotency_key": str(uuid.uuid4()) if idempotency_key is None else idempotency_key,
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
                raw = yield Request("POST", "/events", body)
                break
            except MeterError as err:
                if not retryable(err) or attempt >= MANUAL_ATTEMPTS:
                    raise
                yield Sleep(backoff(attempt, err))
                attempt += 1
        created = ManualEvent(
            id=raw["id"],
            user_id=raw["user_id"],
            cost=float(raw["cost"]),
            model=raw.get("model"),
            source=raw.get("source", "manual"),
            created_at=raw["created_at"],
        )
        now = clock_now()
        with self._lock:
            fresh = created.id not in self._manual_ids
            if fresh:
                if len(self._manual_ids) >= MANUAL_IDS:
                    self._manual_ids.clear()
                self._manual_ids.add(created.id)
            e = self._users.get(user_id)
            session = e.sessions.at(session_of(e.user_id, session_id), now, e.timeout) if e is not None else None
            news = []
            if e is not None and session is not None and fresh:
                self._count(e, session, created.model, input_tokens + output_tokens, created.cost)
                e.count_windows(created.model, input_tokens + output_tokens, created.cost, now, now)
                e.count_team(created.model, input_tokens + output_tokens, created.cost, now, now)
                news = e.credit_news(now)
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
        self._fire_credits(news)
        return created

    def _settle(
        self, hold: Hold, input_tokens: int, output_tokens: int, tool_calls: list[str] | None, metadata: Metadata
    ) -> UsageEvent:
        check_usage(input_tokens, output_tokens, tool_calls, metadata, None, None)
        now = clock_now()
        meta = own_metadata(metadata if metadata is not None else hold.metadata)
        with self._lock:
            self._unhold_locked(hold)
            event = self._meter(
                hold.entry,
                hold.session,
                hold.model,
                input_tokens,
                output_tokens,
                tool_calls,
                meta,
                now,
            )
            news = hold.entry.credit_news(now)
        self._report_drops()
        self._say_unpriced()
        self._fire(self._usage, event)
        self._fire_credits(news)
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
        if hold.counters is not None:
            hold_windows(hold.limits, hold.counters, hold.model, hold.cost, hold.tokens, -1)
        hold_team(hold, -1)
        e.in_flight -= 1
        if self._leases is not None:
            self._leases.unhold(
                e.user_id,
                hold.lease,
                hold.cost,
                hold.model,
                hold.tokens,
                hold.lease_windows,
                hold.lease_team,
                hold.lease_team_windows,
                hold.lease_member_windows,
                hold.lease_periods,
            )

    def _meter(
        self,
        e: UserEntry,
        session: Session,
        model: str | None,
        input_tokens: int,
        output_tokens: int,
        tool_calls: list[str] | None,
        metadata: dict[str, Any],
        now: float,
    ) -> UsageEvent:
        """Prices, counts and queues one call's usage, with ``metadata`` the event's own copy (own_metadata); returns
        the caller's copy of the event (QueuedUsage.view). Caller holds the lock."""
        tools = list(tool_calls or [])
        plan = e.config
        rate = rate_of(model, plan)
        ct = token_cost(input_tokens, output_tokens, rate)
        tc = tools_cost(tools, plan)
        self._note_unpriced(e, model, input_tokens + output_tokens, rate)
        event = QueuedUsage(
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
            metadata=metadata,
        )
        if self._leases is not None:
            event.lease_id = self._leases.spend(e, event.cost_total, model, event.total_tokens, now)
            event.shown()
        self._count(e, session, model, event.total_tokens, event.cost_total)
        e.count_windows(model, event.total_tokens, event.cost_total, now, now)
        e.count_team(model, event.total_tokens, event.cost_total, now, now)
        if plan is not None and e.loaded:
            e.called(model, event.cost_total, event.total_tokens)
        if self._queue.push("usage", event):
            e.pending += 1
            if not e.loaded and not e.unknown:
                # The service has not answered yet: priced (and held back) when it does.
                e.unpriced.append((event, session))
                self._unpriced_ids.add(event.id)
        return event.view

    def _price(self, e: UserEntry) -> None:
        """Prices the usage recorded before the plan was known, now that it is. Caller holds the lock."""
        plan = e.config
        now = clock_now()
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
            rate = rate_of(model, plan)
            event.cost_tokens = token_cost(event.input_tokens, event.output_tokens, rate)
            self._note_unpriced(e, model, event.total_tokens, rate)
            event.cost_tools = tools_cost(event.tool_calls, plan)
            event.cost_total = add_dollars(event.cost_tokens, event.cost_tools)
            self._count(e, session, model, 0, event.cost_total)
            # No window (nor the team) counted the call while the plan was unknown: it had none then.
            at = parse_time(event.timestamp)
            e.count_windows(model, event.total_tokens, event.cost_total, at, now)
            e.count_team(model, event.total_tokens, event.cost_total, at, now)
            event.shown()
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
                raise MeterTypeError("model must be a string")
            m = normalize_model(raw, e.naming)
            if len(e.models) >= MODEL_CACHE:
                e.models.clear()
            e.models[raw] = m
        return m

    # ---- QueueHooks ----

    def _delivered(self, events: list[Event], kind: str, answer: Any) -> None:
        with self._lock:
            self._refused_key = None
            for ev in events:
                if isinstance(ev, QueuedUsage):
                    ev.synced = True
                    ev.shown()
                self._settled(ev.user_id if isinstance(ev, UsageEvent) else str(ev["user_id"]))

    def _discarded(self, events: list[Event]) -> None:
        with self._lock:
            for ev in events:
                self._settled(ev.user_id if isinstance(ev, UsageEvent) else str(ev["user_id"]))

    def _event_held(self, event: Event) -> bool:
        return isinstance(event, UsageEvent) and event.id in self._unpriced_ids

    def _settled(self, user_id: str) -> None:
        e = self._users.get(user_id)
        if e is not None and e.pending > 0:
            e.pending -= 1


def session_of(user_id: str, given: str | None) -> str | None:
    """The call's session: the one it names, else the enclosing ``meter.user()``'s for this user, else
    the library's own (None)."""
    if given is not None:
        return given
    ctx = _current.get()
    return ctx[1] if ctx is not None and ctx[0] == user_id else None


def _non_negative(x: float) -> float:
    return 0.0 if x < 0 else x
