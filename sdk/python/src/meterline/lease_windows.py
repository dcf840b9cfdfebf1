"""The windows a lease request asks for (the slices of the user's Book, or of a team's TeamBook, that run low, are short
for the waiting call or near their lifetime's end) and what the service's answer does to each: lease_requests.py sends
the request."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .clock import now as clock_now
from .lease_books import Book, LeaseSettings, TeamBook, WindowSlice, adopted
from .lease_sizing import asked, balance, renew_margin
from .periods import iso, parse_time

if TYPE_CHECKING:
    from collections.abc import Callable

    from .reservation import WindowNeed

# While failing open, how often a call asks again whether the service answers (s); after the service had nothing
# left of a window another holder holds, how long until it is asked again.
OPEN_RETRY = 1.0
# How long an answer that the plan does not limit what was asked is trusted (s).
UNLIMITED_FOR = 60.0


@dataclass(slots=True)
class WindowAsk:
    """One window a request asks for: its slice, what is asked (in the slice's unit), the cap it is asked under,
    and whether the waiting call's need was short of it."""

    slice: WindowSlice
    need: float
    want: float
    cap: float
    short: bool


def window_need(needs: tuple[WindowNeed, ...], s: WindowSlice) -> float:
    """The least worth granting of a window to the waiting call: all it needs when it must be whole, and only
    while the slice cannot cover it."""
    for w in needs:
        if w.key == s.key and w.whole:
            return w.amount
    return 0.0


def window_asks(
    settings: LeaseSettings,
    b: Book | TeamBook,
    slices: dict[str, WindowSlice],
    needs: tuple[WindowNeed, ...],
    cap_of: Callable[[str], float | None],
    now: float,
    renew: bool,
) -> list[WindowAsk]:
    """Every window slice of the book (``slices``) that runs low, is short for the waiting call (``needs``), or
    nears its lifetime's end, under its cap (``cap_of`` a dimension); slices of calendar windows that ended are
    dropped."""
    for w in needs:
        if w.key not in slices:
            slices[w.key] = WindowSlice(w)
    asks: list[WindowAsk] = []
    for key, s in list(slices.items()):
        if s.end <= now:
            del slices[key]
            continue
        if now < s.unlimited_until:
            continue
        # Held back after a refusal, unless the waiting call needs no more than the service had left.
        if now < s.retry_at and not 0 < window_need(needs, s) <= s.left_at_service:
            continue
        top = cap_of(s.dimension)
        if top is None:
            continue
        late = now >= s.deadline - renew_margin(b, settings.ttl)
        need, want, short = asked(b, s, window_need(needs, s), now, renew or late, settings.calls, top)
        if want <= 0:
            continue
        needed = any(w.key == key for w in needs)
        asks.append(WindowAsk(s, need, math.ceil(want), top, needed and short))
    return asks


def window_wire(asks: list[WindowAsk]) -> list[dict[str, Any]]:
    """The windows asked, as a request names them."""
    return [
        {
            "dimension": a.slice.dimension,
            "window_start": None if a.slice.start is None else iso(a.slice.start),
            "need": a.slice.wire(a.need),
            "want": a.slice.wire(a.want),
        }
        for a in asks
    ]


def windows_granted(
    b: Book | TeamBook,
    asks: list[WindowAsk],
    answers: list[Any],
    sent_at: float,
    ttl: float,
    epoch: int,
    renewed: bool = True,
) -> tuple[bool, bool]:
    """Records the service's answer for each window asked: a grant extends the slice's lifetime; a refusal
    holds further requests for that window back until it ends when no other holder holds any of it (nothing
    can come back before), else for a moment. Whether every window the waiting call was short of got
    something, and whether every one got all that was asked."""
    ok = full = True
    now = clock_now()
    for k, a in enumerate(asks):
        s = a.slice
        answer = answers[k] if k < len(answers) else None
        if not isinstance(answer, dict) or answer.get("dimension") != s.dimension:
            ok = ok and not a.short
            continue
        if not answer.get("limited"):
            s.unlimited_until = now + UNLIMITED_FOR
            continue
        start = answer.get("window_start")
        if s.start is not None and (not isinstance(start, str) or parse_time(start) != s.start):
            ok = ok and not a.short
            continue
        added = s.unit_of(float(answer.get("added") or 0))
        adopted(b, s, s.unit_of(float(answer.get("granted") or 0)), added)
        if added > 0:
            s.granted = s.unit_of(float(answer.get("granted") or 0))
            s.deadline = sent_at + ttl
            s.retry_at = 0.0
            if epoch == b.epoch:
                s.cap = a.cap
        else:
            if a.short:
                ok = False
            # A live slice asked again for no need is kept for another lifetime (``renewed``).
            if renewed and sent_at < s.deadline:
                s.deadline = sent_at + ttl
            remaining = s.unit_of(float(answer.get("remaining") or 0))
            if remaining <= 0 or balance(b, s, now) <= 0:
                # Until the window ends only when nothing is left of it and nobody holds any (nothing can come back
                # before); a call that needed more than is left leaves room for smaller ones.
                holders = int(answer.get("holders") or 0)
                s.retry_at = s.end if remaining <= 0 and holders == 0 and s.end != math.inf else now + OPEN_RETRY
            s.left_at_service = remaining
        if added < a.want:
            full = False
    return ok, full
