"""The check of guard() and reserve(): the plan's gates over the user's counters and the call's reservation (and
for a member of a team the team plan's over the team's and the member's counters),
the lease's share with ``leases=True``, and what a gate sets off (a gate event at most once per reason and
kind per GATE_EVENT_INTERVAL, the callbacks, LimitExceededError or, under fail_closed, MeterUnavailableError)."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from .clock import now as clock_now
from .dimensions import evaluate_nano
from .errors import LimitExceededError, MeterUnavailableError
from .lease_books import LeaseNeed
from .money import add_dollars, to_dollars, to_nano
from .periods import iso
from .plan_rules import OK_RESULT, Rules, rules_of, team_rules_of
from .pricing import estimate_tokens, rate_of, token_cost
from .recording import session_of
from .reservation import NOTHING, Hold, LeasePeriods, Reservation, ReservationAmount, reservation_of
from .state import UserEntry, hold_team, hold_windows
from .types import GateContext, GuardResult, LimitCredits, PlanConfig
from .user_sessions import Session
from .users import LOAD_RETRY, Users
from .validate import own_metadata

# One gate event per (user, gate_reason, kind) per this many seconds at most.
GATE_EVENT_INTERVAL = 5.0
# fail_closed's gate reason: the session view could not be loaded (no gate event: not the service's to record).
SESSION_UNAVAILABLE = "session_unavailable"
# A user blocked because the credits ran out has the view read again at most this often (at its calls), so that a
# top-up, which no change poll announces, lifts the block within seconds.
CREDITS_RELOAD = 5.0
# Lease requests one reserve() waits for at most (the one in flight, then its own): near the cap a call
# waits about one round trip, never an open-ended queue of them.
LEASE_ROUNDS = 2
# Waits for another member's request asking for the team's slices, beyond those rounds: members whose first calls
# come together each wait for the one ask in flight, then the next, before asking themselves.
TEAM_WAITS = 2

# Times a call whose lease covered it when its waits ended goes back to its rounds left, when calls admitted before it
# took what it found (threads waiting for one answer each find that it covers them).
LEASE_RETAKES = 3


class LeaseRetake(Exception):
    """_admit(..., retake=True) found the lease short of the call: the call waits for it again."""


# Estimates kept per plan (by model, input tokens and output limit).
ESTIMATES_KEPT = 256
# Nano-dollar sums from here on are taken through dollars, as add_dollars() does (a float holds them to the
# nano-dollar below it).
_EXACT_NANO = 1 << 50

# What a gate sets off after the lock: its reason, whether it blocks, and the credits a block names.
GateInfo = tuple[str, bool, LimitCredits | None]
Admitted = tuple[GuardResult, GateContext | None, GateInfo | None, Reservation | None]


class Admission(Users):
    def _held(self, admitted: Admitted) -> Reservation:
        """reserve()'s end after _admit(..., hold=True): what a gate sets off, then the call's reservation (a
        blocked call has raised)."""
        self._after_gate(*admitted)
        reservation = admitted[3]
        assert reservation is not None
        return reservation

    def _lease_plan(
        self, e: UserEntry, model: str | None, input_tokens: int | None, prompt: Any, max_output_tokens: int | None
    ) -> tuple[int | None, LeaseNeed | None]:
        """With leases, what reserve() waits for before it checks: the input tokens sized once (the need and the
        check both read them), and the need no lease covers yet (None when covered or nothing to cover)."""
        if self._leases is None:
            return input_tokens, None
        input_tokens = self._sized(e, model, input_tokens, prompt)
        need = self._lease_need(e, model, input_tokens, prompt, max_output_tokens)
        return input_tokens, None if need is None or self._leases.covers(e, need) else need

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
        retake: bool = False,
    ) -> Admitted:
        """Check and hold in one step under the lock. Callbacks and the raise come after, outside it: guard()
        passes the result to _after_gate, reserve() to _held. Its arguments were checked by the call
        (validate.check_estimate), before any wait for the user's view. ``retake``: a lease that no longer covers the
        call raises LeaseRetake (before anything is held or set off) instead of refusing it."""
        now = clock_now()
        if e.credits is not None and now >= e.credits.next_expiry:
            # A grant past its expiry leaves the balance at its expires_at (BUDGETS.md §3) before the check reads the
            # cap; its callbacks fire at once, outside the lock, as TypeScript's fire before its check.
            with self._lock:
                news = e.credit_news(now)
            self._fire_credits(news)
        with self._lock:
            plan = e.config
            m = self._model(e, model)
            session = e.sessions.at(session_of(e.user_id, session_id), now, e.timeout)
            rules = None if plan is None else rules_of(plan)
            # Without pre_call_estimate the check does not read the call's own reservation: guard() skips it.
            pricing = _pricing_plan(e)
            if pricing is not None and (hold or pricing.pre_call_estimate):
                reserved = self._reservation(
                    e, m, input_tokens, prompt, max_output_tokens, rules if pricing is plan else None
                )
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
            elif rules is None:
                result = OK_RESULT
            else:
                e.advance_windows(now)
                est_n = to_nano(est_cost) if reserved.exact and est_cost else 0
                est_t = est_tokens if reserved.exact else 0.0
                t = e.team
                team_plan = None if t is None else t.config
                result = evaluate_nano(
                    rules,
                    _nano_sum(e.period_cost, e.reserved_cost),
                    _nano_sum(session.cost, session.reserved),
                    m,
                    (e.tokens_by_model.get(m, 0) + e.reserved_tokens.get(m, 0)) if m is not None else 0,
                    est_n,
                    est_t,
                    e.period_end_t,
                    # A caller's session lasts as long as it is used: no known end.
                    session.started_at + e.timeout if session is e.sessions.own else None,
                    e.counters,
                    None
                    if t is None or team_plan is None
                    else (
                        # The member's team: the team plan's dimensions over the team's sums and the member's share.
                        team_rules_of(team_plan),
                        _nano_sum(t.period_cost, t.reserved_cost) if t.reserved_cost else to_nano(t.period_cost),
                        (t.tokens_by_model.get(m, 0) + t.reserved_tokens.get(m, 0)) if m is not None else 0,
                        t.period_end_t,
                        e.advance_team(now),
                    ),
                )
            lease: str | None = None
            periods: LeasePeriods | None = None
            need = None
            if hold and result.status != "hard_gate" and self._leases is not None:
                need = self._leases.need(e, m, reserved)
                if need is not None:
                    taken = self._leases.take(e, need)
                    if isinstance(taken, GuardResult):
                        if retake:
                            raise LeaseRetake
                        result = taken
                    else:
                        lease, periods = taken
            ctx = None
            gate_info = None
            if result.status != "ok":
                ctx = GateContext(e.user_id, session.id, m)
                credits = _credits_of(e, result)
                if credits is not None:
                    e.refresh_at = min(e.refresh_at, now + CREDITS_RELOAD)
                gate_info = (*self._gate_event(e, session, m, result, metadata, now, credits), credits)
            reservation = None
            blocked = result.status == "hard_gate" and self.blocking
            if hold and not blocked:
                e.reserved_cost = add_dollars(e.reserved_cost, est_cost)
                session.reserved = add_dollars(session.reserved, est_cost)
                if m is not None and est_tokens > 0:
                    e.reserved_tokens[m] = e.reserved_tokens.get(m, 0) + est_tokens
                e.in_flight += 1
                held = Hold(e, session, m, est_cost, est_tokens, metadata, lease)
                if lease is not None and need is not None:
                    held.lease_periods = periods
                    held.lease_windows = need.windows
                    held.lease_team = need.team
                    held.lease_team_windows = need.team_windows
                    held.lease_member_windows = need.member_windows
                if plan is not None and plan.limits:
                    held.limits = plan.limits
                    held.counters = e.counters
                    hold_windows(plan.limits, e.counters, m, est_cost, est_tokens, 1)
                t = e.team
                if t is not None and t.config is not None:
                    held.team = t
                    if t.config.limits:
                        held.team_limits = t.config.limits
                        held.team_counters = e.team_mix
                    hold_team(held, 1)
                reservation = Reservation(self, held, result)
            elif hold and lease is not None and self._leases is not None:
                self._leases.unhold(
                    e.user_id,
                    lease,
                    est_cost,
                    m,
                    est_tokens,
                    need.windows if need else (),
                    need.team if need else None,
                    need.team_windows if need else (),
                    need.member_windows if need else (),
                    periods,
                )
            return result, ctx, gate_info, reservation

    def _gate_event(
        self,
        e: UserEntry,
        session: Session,
        model: str | None,
        result: GuardResult,
        metadata: dict[str, Any] | None,
        now: float,
        credits: LimitCredits | None = None,
    ) -> tuple[str, bool]:
        """Writes a gate event at most once per (gate_reason, kind, and for session_spend the session) per
        5 s: soft, hard and blocked apart,
        so the first hard gate and the first blocked call always become events; later ones are counted."""
        hard = result.status == "hard_gate"
        blocked = hard and self.blocking
        reason = result.gate_reason or ""
        if not reason or reason == SESSION_UNAVAILABLE:
            # Not the service's to record: it could not be reached, or refused the key (fail_closed).
            return reason, blocked
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
        meta = own_metadata(metadata)
        if suppressed:
            meta["suppressed_events"] = suppressed
        if credits is not None and hard:
            # Prepaid credits (or a team's pool) that ran out: the gate event says so, as the error does.
            meta["credits"] = {"balance": credits.balance, "low_at": credits.low_at}
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
        gate_info: GateInfo | None,
        reservation: Reservation | None = None,
    ) -> GuardResult:
        if ctx is None or gate_info is None:
            return result
        self._report_drops()
        hard = result.status == "hard_gate"
        for cb in self._hard if hard else self._soft:
            self._safely(cb, result, ctx)
        if gate_info[1]:
            if result.gate_reason == SESSION_UNAVAILABLE:
                # An outage, not a limit: retry when the library next tries to load the view.
                retry = datetime.fromtimestamp(clock_now() + LOAD_RETRY, timezone.utc)
                raise MeterUnavailableError(result, retry)
            raise LimitExceededError(result, credits=gate_info[2])
        return result

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
    ) -> LeaseNeed | None:
        assert self._leases is not None
        with self._lock:
            m = self._model(e, model)
            reserved = (
                NOTHING
                if _pricing_plan(e) is None
                else self._reservation(e, m, input_tokens, prompt, max_output_tokens)
            )
            return self._leases.need(e, m, reserved)

    @staticmethod
    def _reservation(
        e: UserEntry,
        m: str | None,
        input_tokens: int | None,
        prompt: Any,
        max_output_tokens: int | None,
        rules: Rules | None = None,
    ) -> ReservationAmount:
        """What the call reserves (reservation_of): its estimate with pre_call_estimate, else the user's
        typical call. Caller holds the lock, and a plan prices the user's calls (``rules``: its rules, when at hand)."""
        plan = _pricing_plan(e)
        assert plan is not None
        recent = e.recent_calls(m)
        # An estimate (not the typical call) of a call whose size is known depends on the plan, the model and
        # the sizes alone: kept per plan.
        estimates = (
            (rules or rules_of(plan)).estimates
            if (plan.pre_call_estimate or recent is None) and (input_tokens is not None or prompt is None)
            else None
        )
        key = (m, input_tokens, max_output_tokens)
        if estimates is not None:
            hit: ReservationAmount | None = estimates.get(key)
            if hit is not None:
                return hit
            if len(estimates) >= ESTIMATES_KEPT:
                estimates.clear()
        amount = reservation_of(
            plan.pre_call_estimate,
            recent,
            lambda: input_tokens if input_tokens is not None else estimate_tokens(prompt),
            max_output_tokens,
            plan.pre_call_buffer_tokens,
            lambda i, o: token_cost(i, o, rate_of(m, plan)),
        )
        if estimates is not None:
            estimates[key] = amount
        return amount


def _credits_of(e: UserEntry, result: GuardResult) -> LimitCredits | None:
    """What a block names of the user's credits, or its team's pool, when they are what ran out (credits.py), else
    None."""
    if e.team is not None:
        pool = e.team.pool_block(result.gate_reason, result.status, result.current_value)
        if pool is not None:
            return pool
    c = e.credits
    if c is None or result.status != "hard_gate":
        return None
    return c.block(result.gate_reason, result.status, result.current_value, e.period_cost)


def _nano_sum(a: float, b: float) -> int:
    """to_nano(add_dollars(a, b)), without the round trip through dollars where it changes nothing."""
    n = to_nano(a) + to_nano(b)
    return n if -_EXACT_NANO < n < _EXACT_NANO else to_nano(to_dollars(n))


def _pricing_plan(e: UserEntry) -> PlanConfig | None:
    """The plan that prices a user's calls: its own, else, for a member of a team with a plan in force, the
    team plan (as the service prices them), so that a member's reservation and its lease of the team's cap
    count what its calls cost."""
    if e.config is not None:
        return e.config
    return e.team.config if e.team is not None else None
