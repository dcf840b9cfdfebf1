"""How much a budget lease's slice has left, when the next slice is asked for, and how much is asked (pure, over a
Book of lease_books.py): a few round trips' worth of the measured spend rate is kept in hand, so that far from
the cap no call waits for the network."""

from __future__ import annotations

import math
from typing import Any

from .lease_books import RATE_MIN_WINDOW, RATE_TAU, Book, Slice, TeamBook, WindowSlice, horizon, renewing, valid
from .money import add_dollars, to_dollars, to_nano

# Round trips' worth of the measured spend rate a slice keeps in hand: below it the next slice is
# asked for in the background, so that it arrives even when a round trip takes a few times its usual.
_LOOKAHEAD = 3
# Until a spend rate is measured (RATE_TAU of spending) and while the service grants in full what
# is asked (far from the cap), a request asks for at least what the calls in flight or waiting would
# spend in a planned round trip (horizon()) if each took this long (s): the calls in flight are then
# the only measure of how fast the slice goes, and a first slice that runs dry before the next
# request answers makes every call in flight wait for it. 8 ms: a tool call or a cached answer is
# that short (the TypeScript client's MIN_CALL_MS).
_MIN_CALL = 0.008
# A slice holding more than _SPARE_ABOVE planned round trips of its spend rate offers the part beyond _SPARE_KEEP of
# them back with its next request (``spare``; the service takes only what the lease holds beyond an equal share):
# replicas whose first requests the service did not gather are granted the cap in the order they ask, and the first ones
# would otherwise sit for seconds on what the last ones run short of. What is offered is not spent until the answer
# comes: two round trips kept cover the offer's own, even one that takes twice as long as planned (the TypeScript
# client's SPARE_KEEP). A team's spend slice and its slice of a model's team token cap are offered the same way
# (``team.spare``, ``team.spare_tokens``): the holders serving every member share its caps.
_SPARE_ABOVE = 3
_SPARE_KEEP = 2


def balance(b: Book | TeamBook, s: Slice, now: float) -> float:
    """What the slice has left to spend now: nothing once the lease's (or the window slice's) lifetime passed, its
    period or window ended, or a plan change made it no longer valid."""
    if isinstance(s, WindowSlice):
        # A window's slice is worth nothing once the window ended or its lifetime passed.
        if now >= s.deadline or now >= s.end:
            return 0.0
        if renewing(b) and not valid(b, s):
            return 0.0
        return s.granted - s.used
    if now >= b.deadline or now >= b.period_end:
        return 0.0
    if renewing(b) and not valid(b, s):
        return 0.0
    return add_dollars(s.granted, -s.used) if s is b.spend else s.granted - s.used


def low_water(b: Book | TeamBook, s: Slice, now: float, waiting: int = 0) -> float:
    """Below this much left the next slice is asked for: _LOOKAHEAD round trips of the spend
    rate, and never less than one call per call in flight (a replica's concurrency)."""
    return max(s.unit * (b.holds + waiting + 1), _LOOKAHEAD * s.rate(now) * horizon(b))


def low(b: Book | TeamBook, s: Slice, now: float) -> bool:
    return balance(b, s, now) < low_water(b, s, now)


def renew_margin(b: Book | TeamBook, ttl: float) -> float:
    """How long before a lease's lifetime ends it is renewed."""
    return max(_LOOKAHEAD * horizon(b), ttl / 4)


def renew_at(b: Book, ttl: float) -> float:
    """From here on the lease is renewed (asked for more, which restarts its lifetime) before it lapses."""
    return b.deadline - renew_margin(b, ttl)


def first_slice(cap: float | None, calls: int) -> float:
    """What the first request asks of a budget while nothing is known of its calls (estimated at 0, none finished
    yet): a share of the cap, as much as ``calls`` equal calls would spend of it."""
    return 0.0 if cap is None or math.isinf(cap) else cap / calls


def asked(
    b: Book | TeamBook, s: Slice, need: float, now: float, renew: bool, calls: int, cap: float | None
) -> tuple[float, float, bool]:
    """What a request asks of one budget: nothing while it covers the waiting call and holds its
    low-water mark (unless the lease is renewed); else the low-water mark plus ``calls``
    (``lease_calls``) calls and one per waiting call, times the boost, plus what finished calls took
    beyond the slice (their real cost was known only after they ran); until a rate is measured,
    while grants are full, at least what the calls in flight or waiting spend in a planned round
    trip if each took _MIN_CALL. While no unit is known (calls estimated at 0 and none finished yet),
    ``cap`` / ``calls`` (``cap``: the budget's cap in its unit, None when unknown). The least worth
    granting is what the waiting call's need lacks beyond what the slice holds: the service grants
    nothing below it, so asking the whole call near the cap refused calls that what is held plus
    what is left would cover."""
    left = balance(b, s, now)
    short = left <= 0 or left < need
    mark = low_water(b, s, now, b.joined)
    if not short and left >= mark and not renew:
        return 0.0, 0.0, short
    over = max(0.0, -left)
    lacking = 0.0 if not short or need <= 0 else add_dollars(need, -left) if s is b.spend else need - left
    if s.unit == 0:
        return lacking, max(need, lacking, first_slice(cap, calls) + over), short
    young = s.age(now) < RATE_TAU
    floor = s.unit * (b.holds + b.joined) * horizon(b) / _MIN_CALL if b.full and young else 0.0
    boost = b.boost if b.full else 1.0
    want = max(need, lacking, boost * (mark + s.unit * (calls + b.joined)) + over, floor)
    return lacking, want, short


def spare(b: Book | TeamBook, s: Slice, now: float) -> float:
    """What a slice holds beyond _SPARE_KEEP planned round trips of its spend rate (each at least a call per call in
    flight), once it holds more than _SPARE_ABOVE of them and its rate is measured (0 before ``b.spare_at``): offered
    back with the next request, and not spent until the answer comes. A team's spend slice too: every member's
    holders share the team's cap."""
    if now < b.spare_at or renewing(b) or s.age(now) < RATE_MIN_WINDOW:
        return 0.0
    if isinstance(b, Book) and (b.lost_at > 0 or b.open):
        return 0.0
    trip = max(s.unit * (b.holds + 1), s.rate(now) * horizon(b))
    left = balance(b, s, now)
    if not trip > 0 or left < _SPARE_ABOVE * trip:
        return 0.0
    keep = _SPARE_KEEP * trip
    if s is b.spend:
        return to_dollars(math.floor(to_nano(left) - to_nano(keep)))
    return float(math.floor(left - keep))


def team_spares(tb: TeamBook, model: str | None, now: float) -> bool:
    """The team's spend slice, or its slice of ``model``'s team token cap, has something to offer back."""
    return spare(tb, tb.spend, now) > 0 or (model is not None and spare(tb, tb.slice(model), now) > 0)


def spared(
    b: Book | TeamBook,
    model: str | None,
    offered: tuple[float, int],
    lease: dict[str, Any] | None,
    ttl: float,
    now: float,
) -> None:
    """The answer to an offer of a book's slices, the user's or its team's (None: refused, nothing taken): what was
    not taken back is the slices' again. The next offer waits a planned round trip after one the service took from,
    and twice as long as the last after one it took nothing of."""
    spare_dollars, spare_tokens = offered
    returned = min(spare_dollars, float(lease.get("returned") or 0)) if lease else 0.0
    lt = lease.get("tokens") if lease else None
    returned_tokens = min(spare_tokens, int(lt.get("returned") or 0)) if isinstance(lt, dict) else 0
    b.spend.granted = add_dollars(b.spend.granted, add_dollars(spare_dollars, -returned))
    if model is not None and spare_tokens > 0:
        b.slice(model).granted += spare_tokens - returned_tokens
    took = returned > 0 or returned_tokens > 0
    b.spare_gap = RATE_MIN_WINDOW if took else min(2 * b.spare_gap, renew_margin(b, ttl))
    b.spare_at = now + (horizon(b) if took else b.spare_gap)
