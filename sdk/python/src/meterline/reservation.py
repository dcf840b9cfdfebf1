"""A checked call in flight: what ``reserve()`` returns. It holds the call's reservation (cost and
tokens) against the limits until committed or released: with the plan's pre_call_estimate its
estimate, otherwise the user's typical call (see ``reservation_of``)."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .errors import MeterStateError
from .types import GuardResult, PlanLimit, UsageEvent

if TYPE_CHECKING:
    from .counters import LimitCounter
    from .recent_calls import RecentCalls
    from .state import UserEntry
    from .teams import TeamEntry
    from .user_sessions import Session


class ReservationAmount(NamedTuple):
    """What a reserved call holds. ``exact`` (pre_call_estimate): the call is blocked when its estimate
    would take usage past the hard gate, and a lease must cover all of it. Otherwise (the default) the
    call runs while usage plus what the calls in flight hold is below the hard gate, and holds its amount."""

    cost: float
    tokens: float
    exact: bool


NOTHING = ReservationAmount(0.0, 0.0, False)


@dataclass(frozen=True, slots=True)
class WindowNeed:
    """One window of the plan's limits a call counts in (one slice each)."""

    # ``<dimension>|<window start>``, or ``<dimension>|r`` for a rolling window.
    key: str
    dimension: str
    # Calendar and period windows: the window's bounds (epoch s); rolling: None and infinity.
    start: float | None
    end: float
    # The call's amount in the limit's unit: its estimate in nano-dollars or tokens, 1 request.
    amount: float
    # Index of the (first) limit of this dimension in the plan.
    limit: int
    # The lease must hold all of it: a request (the call itself) or a pre-call estimate.
    whole: bool


NO_WINDOWS: tuple[WindowNeed, ...] = ()


def reservation_of(
    pre_call_estimate: bool,
    recent: RecentCalls | None,
    input_tokens: Callable[[], int],
    max_output_tokens: int | None,
    buffer_tokens: int,
    cost: Callable[[int, int], float],
) -> ReservationAmount:
    """The rule of what a call reserves. With pre_call_estimate: its estimate, input tokens plus the
    request's output limit, else pre_call_buffer_tokens. Without: the user's typical call of the model
    (the largest of the last TYPICAL_CALLS real ones), so that calls in flight hold back the ones after
    them near a cap; a user's first call of a model (no history yet) reserves the estimate instead.
    ``input_tokens`` is asked for only when the estimate is needed."""
    if not pre_call_estimate and recent is not None:
        typical_cost, typical_tokens = recent.typical()
        return ReservationAmount(typical_cost, typical_tokens, False)
    in_tokens = input_tokens()
    out_tokens = buffer_tokens if max_output_tokens is None else max_output_tokens
    return ReservationAmount(cost(in_tokens, out_tokens), float(in_tokens + out_tokens), pre_call_estimate)


class LeasePeriods(NamedTuple):
    """The periods (their ends) of the user's and the team's lease books a hold was taken in: a new period's slices
    start afresh, and are given back nothing taken in the last one."""

    user: float
    team: float


class LeaseTaken(NamedTuple):
    """What Leases.take() took a call's estimate from: the lease id its event carries (None: no lease covered it)
    and the periods it was taken in."""

    lease_id: str | None
    periods: LeasePeriods | None


@dataclass(slots=True)
class Hold:
    entry: UserEntry
    session: Session
    model: str | None
    cost: float
    tokens: float
    metadata: dict[str, Any] | None
    lease: str | None = None
    # The windows the call took from the lease's slices: given back to those.
    lease_windows: tuple[WindowNeed, ...] = ()
    # The team whose lease slices (of the team's period spend cap and team-scope windows) the estimate was taken
    # from, and those windows.
    lease_team: TeamEntry | None = None
    lease_team_windows: tuple[WindowNeed, ...] = ()
    # The member-scope windows of the team plan whose slices (the member's own) the estimate was taken from.
    lease_member_windows: tuple[WindowNeed, ...] = ()
    # The periods of the user's and the team's lease books the estimate was taken in.
    lease_periods: LeasePeriods | None = None
    # The plan's limits and their counters the call held against: given back to those, even after a reload
    # changed them.
    limits: tuple[PlanLimit, ...] = ()
    counters: list[LimitCounter] | None = None
    # A member's team the call held on, with the team plan's limits and the counters (the team's or the member's
    # by scope) it held on.
    team: TeamEntry | None = None
    team_limits: tuple[PlanLimit, ...] = ()
    team_counters: list[LimitCounter] | None = None


class Ledger(Protocol):
    def _settle(
        self,
        hold: Hold,
        input_tokens: int,
        output_tokens: int,
        tool_calls: list[str] | None,
        metadata: dict[str, Any] | None,
    ) -> UsageEvent: ...
    def _unhold(self, hold: Hold) -> None: ...


class Reservation:
    """Use as a context manager: the estimate is given back if the block raises or never commits."""

    __slots__ = ("_hold", "_ledger", "_lock", "_state", "model", "result", "session_id", "user_id")

    def __init__(self, ledger: Ledger, hold: Hold, result: GuardResult) -> None:
        self._ledger = ledger
        self._hold = hold
        self._state = "open"
        self._lock = threading.Lock()
        self.user_id = hold.entry.user_id
        self.session_id = hold.session.id
        self.model = hold.model
        self.result = result

    def commit(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        tool_calls: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> UsageEvent:
        """Records the call's real usage and gives back the estimate. Once only; not after release()."""
        with self._lock:
            if self._state != "open":
                raise MeterStateError(f"reservation already {self._state}")
            event = self._ledger._settle(self._hold, input_tokens, output_tokens, tool_calls, metadata)
            self._state = "committed"
            return event

    def release(self) -> None:
        """Nothing is recorded and the estimate is given back. Idempotent; no effect after commit()."""
        with self._lock:
            if self._state != "open":
                return
            self._state = "released"
        self._ledger._unhold(self._hold)

    @property
    def open(self) -> bool:
        return self._state == "open"

    def __enter__(self) -> Reservation:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    async def __aenter__(self) -> Reservation:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


class AsyncReserve:
    """What areserve() (AsyncMeter: reserve()) returns: awaitable, and an async context manager that releases
    on error."""

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
