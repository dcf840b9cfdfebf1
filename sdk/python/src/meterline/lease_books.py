"""A budget lease's books (leases.py): the slices this process holds of each budget, what they spent and how
fast, and the round trips of the requests that fill them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .money import ratio
from .periods import iso
from .types import GuardResult

if TYPE_CHECKING:
    from .flow import Handle
    from .state import UserEntry

# The shortest round trip planned for (s): a request that takes this long, when requests usually
# answer in milliseconds, still finds the slice covering the calls meanwhile.
_MIN_HORIZON = 1.0# Time constant of the spend-rate average (s), and the shortest window a young rate is taken over.
RATE_TAU = 2.0
_RATE_MIN_WINDOW = 0.1

@dataclass(frozen=True, slots=True)
class LeaseSettings:
    ttl: float
    calls: int
    idle: float
    fallback: str


@dataclass(frozen=True, slots=True)
class LeaseNeed:
    cost: float
    model: str | None
    tokens: float
    # The lease must hold all of it (a pre-call estimate); else (a typical call, the default) the call is
    # covered while the lease holds anything, and takes its amount from it all the same.
    whole: bool


class Slice:
    __slots__ = ("cap", "decayed", "first_at", "granted", "last_at", "model", "unit", "used")

    def __init__(self, model: str | None = None) -> None:
        # The model whose tokens this is, or None for dollars.
        self.model = model
        # The cap (times hard_gate_at) of the plan the client knew when the request that granted it was sent.
        self.cap = math.inf
        self.granted = 0.0
        self.used = 0.0
        self.unit = 0.0
        # Estimates taken, decayed with RATE_TAU; when the first and the last were taken.
        self.decayed = 0.0
        self.first_at = 0.0
        self.last_at = 0.0

    def took(self, amount: float, now: float) -> None:
        if self.first_at == 0:
            self.first_at = now
        self.decayed = self.decayed * math.exp(-max(0.0, now - self.last_at) / RATE_TAU) + amount
        self.last_at = now

    def age(self, now: float) -> float:
        """How long estimates have been taken (s; 0 before the first)."""
        return 0.0 if self.first_at == 0 else now - self.first_at

    def rate(self, now: float) -> float:
        """Estimates taken per second lately (the decayed sum, corrected for how long it has been summed)."""
        if self.first_at == 0:
            return 0.0
        window = max(_RATE_MIN_WINDOW, now - self.first_at)
        decayed = self.decayed * math.exp(-max(0.0, now - self.last_at) / RATE_TAU)
        return decayed / (RATE_TAU * (1 - math.exp(-window / RATE_TAU)))


class Book:
    def __init__(self, user_id: str, entry: UserEntry) -> None:
        self.user_id = user_id
        # The user's view (replaced when an idle user is loaded again).
        self.entry = entry
        self.lease_id: str | None = None
        self.spend = Slice()
        self.tokens: dict[str, Slice] = {}
        self.deadline = 0.0
        self.period_end = 0.0
        self.unlimited_until = 0.0
        self.open = False
        self.last_use = 0.0
        self.asked_at = 0.0
        # Round trips of lease requests (s): smoothed, their mean deviation, a peak that fades.
        self.srtt = 0.0
        self.rttvar = 0.0
        self.peak_rtt = 0.0
        self.rtts = 0
        # False once the service granted less than asked (its share near the cap).
        self.full = True
        self.boost = 1.0
        # Calls waited for a request since the last grant, while a lease was held.
        self.starved = False
        self.holds = 0
        self.joined = 0
        self.asking: Handle | None = None
        # Plan or subscription changes seen (renew()), and how many had been seen when the request
        # behind the last grant was sent, and the last request: while they differ the slice may have
        # been granted under caps no longer in force.
        self.epoch = 0
        self.grant_epoch = 0
        self.asked_epoch = 0

    def slice(self, model: str) -> Slice:
        s = self.tokens.get(model)
        if s is None:
            s = self.tokens[model] = Slice(model)
        return s


def horizon(b: Book) -> float:
    """A round trip to plan for: the smoothed one plus two deviations, a recent peak when
    longer, at least _MIN_HORIZON."""
    return max(b.srtt + 2 * b.rttvar, b.peak_rtt, _MIN_HORIZON)

def round_trip(b: Book, rtt: float) -> None:
    if b.rtts == 0:
        b.srtt, b.rttvar = rtt, rtt / 2
    else:
        b.rttvar = 0.75 * b.rttvar + 0.25 * abs(b.srtt - rtt)
        b.srtt = 0.875 * b.srtt + 0.125 * rtt
    b.rtts += 1
    b.peak_rtt = max(rtt, 0.8 * b.peak_rtt)

def renewing(b: Book) -> bool:
    """A plan or subscription change came after the request behind the last grant was sent."""
    return b.grant_epoch != b.epoch

def valid(b: Book, s: Slice) -> bool:
    """The slice, granted under the caps of ``s.cap``, is within the caps in force now, in the lease's period."""
    if abs(b.entry.period_end_t - b.period_end) > 1e-3:
        return False
    cap = cap_of(b.entry, s.model)
    return cap is None or cap >= s.cap


def cap_of(e: UserEntry, model: str | None) -> float | None:
    """The cap (times hard_gate_at) of the user's plan in force on dollars (model None) or on a model's
    tokens; None when uncapped."""
    plan = e.config
    if plan is None:
        return None
    top = plan.max_spend_per_period if model is None else plan.model_limits.get(model)
    return None if top is None else float(top) * plan.hard_gate_at


def refusal(e: UserEntry, reason: str, current: float, cap: float, message: str) -> GuardResult:
    """A lease that does not cover a call: a hard gate of the period's caps, lifted at the period's end."""
    pct = max(1.0, ratio(current, cap)) if cap > 0 else 1.0
    return GuardResult("hard_gate", reason, pct, current, cap, message, iso(e.period_end_t))
