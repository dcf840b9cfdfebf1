"""Budget leases (``leases=True``): the user's period spend cap, per-model token caps and the windows of the
plan's ``limits`` are spent from slices the service grants this process (``POST /users/{id}/leases``), so
that many replicas together never pass them, with no request per call: a call runs only when every slice it
touches covers it. The next slice is asked for ahead, in the background, while the current one still covers a
few round trips' worth of the measured spend rate: far from the cap no call waits for the network."""

from __future__ import annotations

import math
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .clock import now as clock_now
from .errors import MeterAPIError, MeterError
from .flow import Flow, Handle, Request, running
from .lease_books import (
    NO_WINDOWS,
    RATE_TAU,
    Book,
    LeaseNeed,
    LeaseSettings,
    Slice,
    WindowNeed,
    WindowSlice,
    cap_of,
    horizon,
    refusal,
    renewing,
    round_trip,
    valid,
    window_cap_of,
    window_needs,
    window_refusal,
)
from .money import add_dollars
from .reservation import ReservationAmount
from .state import iso, parse_time
from .types import GuardResult

if TYPE_CHECKING:
    from collections.abc import Callable

    from .state import UserEntry

# While failing open, how often a call asks again whether the service answers (s).
_OPEN_RETRY = 1.0
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
# While grants are full, each grant that finds calls waiting doubles what the next requests ask
# for, up to this factor: the measured rate lags a replica's start.
_MAX_BOOST = 8.0
# How long an answer that the plan does not limit what was asked is trusted (s).
_UNLIMITED_FOR = 60.0


@dataclass(slots=True)
class _WindowAsk:
    """One window a request asks for: its slice, what is asked (in the slice's unit), the cap it is asked under,
    and whether the waiting call's need was short of it."""

    slice: WindowSlice
    need: float
    want: float
    cap: float
    short: bool


class Leases:
    def __init__(
        self,
        settings: LeaseSettings,
        warn: Callable[[str, BaseException | None], None],
        spawn: Callable[[Flow[bool]], Handle],
    ) -> None:
        self.settings = settings
        self.warn = warn
        # Starts a lease request in the background (the client's thread pool, or a task on its event loop).
        self.spawn = spawn
        self.holder = f"h_{uuid.uuid4().hex}"
        self.books: dict[str, Book] = {}
        self.requests = 0
        self.warned = False
        self.lock = threading.RLock()

    def after_fork(self) -> None:
        """A forked child is another holder: the parent's slices stay the parent's to spend."""
        self.holder = f"h_{uuid.uuid4().hex}"
        self.books = {}
        self.lock = threading.RLock()

    def need(self, e: UserEntry, model: str | None, reserved: ReservationAmount) -> LeaseNeed | None:
        """What a call of ``model`` needs from the lease; None when nothing it spends is capped (or the user is not
        loaded). Caller holds the client's lock (the windows are brought to now)."""
        plan = e.config
        if plan is None or not e.loaded:
            return None
        capped = model if model is not None and model in plan.model_limits else None
        now = clock_now()
        windows = window_needs(e, model, reserved, now) if plan.limits else NO_WINDOWS
        if plan.max_spend_per_period is None and capped is None and not windows:
            return None
        if now < self._book(e).unlimited_until:
            return None
        return LeaseNeed(
            0.0 if plan.max_spend_per_period is None else reserved.cost,
            capped,
            0.0 if capped is None else reserved.tokens,
            reserved.exact,
            windows,
        )

    def covers(self, e: UserEntry, n: LeaseNeed) -> bool:
        with self.lock:
            b = self._book(e)
            return b.open or self._short(e, b, n, clock_now()) is None

    def asking(self, e: UserEntry, n: LeaseNeed) -> Handle | None:
        """The lease request a call the lease does not cover waits for (its result: True when every short budget
        got something); None when there is nothing to wait for: the lease covers the call, or a window it needs
        had nothing left at the service when last asked (the call is then refused without asking)."""
        with self.lock:
            b = self._book(e)
            now = clock_now()
            if b.open or self._short(e, b, n, now) is None or self._exhausted(b, n, now):
                return None
            return self.ask(e, n)

    def ask(self, e: UserEntry, n: LeaseNeed, waiting: bool = True) -> Handle:
        """Asks for more (one request per user at a time); its result is True when every short budget got something.
        ``waiting``: a call waits for the answer (else it is asked ahead, from take())."""
        with self.lock:
            b = self._book(e)
            self._unit(b, n)
            if waiting and b.lease_id is not None:
                b.starved = True
            if running(b.asking):
                assert b.asking is not None
                b.joined += 1
                return b.asking
            sent_at = clock_now()
            b.asked_at = sent_at
            if waiting:
                b.joined += 1
            epoch = b.asked_epoch = b.epoch
            caps = (cap_of(e, None), None if n.model is None else cap_of(e, n.model))
            renew = sent_at >= self._renew_at(b) or b.open or renewing(b)
            # Only a whole need is the least worth granting: a typical call is covered by any slice, and its
            # first call's estimate may be more than the cap has left.
            spend = (
                (0.0, 0.0, False)
                if caps[0] is None
                else self._asked(b, b.spend, n.cost if n.whole else 0.0, sent_at, renew)
            )
            body: dict[str, Any] = {
                "holder": self.holder,
                "need": spend[0],
                "want": spend[1],
                "ttl_ms": int(self.settings.ttl * 1000),
            }
            windows = self._window_asks(e, b, n, sent_at, renew)
            if windows:
                body["windows"] = [
                    {
                        "dimension": a.slice.dimension,
                        "window_start": None if a.slice.start is None else iso(a.slice.start),
                        "need": a.slice.wire(a.need),
                        "want": a.slice.wire(a.want),
                    }
                    for a in windows
                ]
            tok: tuple[float, float, bool] | None = None
            if n.model is not None:
                tok = self._asked(b, b.slice(n.model), n.tokens if n.whole else 0.0, sent_at, renew)
                body.update(model=n.model, need_tokens=math.ceil(tok[0]), want_tokens=math.ceil(tok[1]))
            b.joined = 0
            self.requests += 1
            # Its end is read from the handle (done()), so a request that ends before this line is no harm.
            b.asking = self.spawn(self._request(e, b, n, body, spend, tok, windows, sent_at, epoch, caps))
            return b.asking

    def _window_need(self, n: LeaseNeed, s: WindowSlice) -> float:
        """The least worth granting of a window to the waiting call: all it needs when it must be whole, and only
        while the slice cannot cover it."""
        for w in n.windows:
            if w.key == s.key and w.whole:
                return w.amount
        return 0.0

    def _window_asks(self, e: UserEntry, b: Book, n: LeaseNeed, now: float, renew: bool) -> list[_WindowAsk]:
        """Every window of the user's calls that runs low, is short for the waiting call, or nears its lifetime's
        end; slices of calendar windows that ended are dropped."""
        for w in n.windows:
            b.window(w)
        asks: list[_WindowAsk] = []
        for key, s in list(b.windows.items()):
            if s.end <= now:
                del b.windows[key]
                continue
            if now < s.retry_at or now < s.unlimited_until:
                continue
            top = window_cap_of(e, s.dimension)
            if top is None:
                continue
            need, want, short = self._asked(
                b, s, self._window_need(n, s), now, renew or now >= s.deadline - self._renew_margin(b)
            )
            if want <= 0:
                continue
            needed = any(w.key == key for w in n.windows)
            asks.append(_WindowAsk(s, need, math.ceil(want), top, needed and short))
        return asks

    def _request(
        self,
        e: UserEntry,
        b: Book,
        n: LeaseNeed,
        body: dict[str, Any],
        spend: tuple[float, float, bool],
        tok: tuple[float, float, bool] | None,
        windows: list[_WindowAsk],
        sent_at: float,
        epoch: int,
        caps: tuple[float | None, float | None],
    ) -> Flow[bool]:
        ok = False
        try:
            res = yield Request("POST", f"/users/{quote(b.user_id, safe='')}/leases", body)
            with self.lock:
                round_trip(b, max(0.0, clock_now() - sent_at))
                b.open = False
                lease = res.get("lease") if isinstance(res, dict) else None
                if not isinstance(res, dict) or not res.get("limited") or not lease:
                    b.unlimited_until = clock_now() + _UNLIMITED_FOR
                    return True
                period_end = parse_time(lease["period_end"])
                if b.lease_id is None or period_end != b.period_end:
                    b.spend.granted = b.spend.used = 0.0
                    b.tokens.clear()
                b.lease_id = lease["lease_id"]
                b.period_end = period_end
                lt = lease.get("tokens")
                added_tokens = float(lt["added"]) if lt else 0.0
                windows_ok, windows_full = self._windows_granted(
                    b, windows, lease.get("windows") or [], sent_at, float(lease["ttl_ms"]) / 1000, epoch
                )
                ok = (
                    (not spend[2] or not lease.get("spend_limited") or lease["added"] > 0)
                    and (tok is None or not tok[2] or lt is None or added_tokens > 0)
                    and windows_ok
                )
                b.full = (
                    float(lease["added"]) >= spend[1] - 1e-9
                    and (tok is None or lt is None or added_tokens >= math.ceil(tok[1]))
                    and windows_full
                )
                b.boost = 1.0 if not b.full else min(_MAX_BOOST, 2 * b.boost) if b.starved else b.boost
                b.starved = False
                if lease["added"] > 0 or added_tokens > 0:
                    if sent_at >= b.deadline:
                        for t in b.tokens.values():
                            t.granted = min(t.granted, t.used)
                    b.spend.granted = float(lease["granted"])
                    if n.model is not None and lt is not None:
                        b.slice(n.model).granted = float(lt["granted"])
                    self._granted(b, epoch, caps, n.model)
                    b.deadline = sent_at + float(lease["ttl_ms"]) / 1000
        except MeterError as err:
            if isinstance(err, MeterAPIError) and not err.retryable:
                if err.status == 422 and windows:
                    # A service that does not lease windows yet refuses the field: windows are then kept per
                    # process, as without leases, and asked for again in a minute.
                    with self.lock:
                        for a in windows:
                            a.slice.unlimited_until = clock_now() + _UNLIMITED_FOR
                    ok = True
                self.warn(f"lease request for {b.user_id} refused", err)
            else:
                with self.lock:
                    b.open = self.settings.fallback == "open"
                    first = not self.warned
                    self.warned = True
                if first:
                    self.warn(
                        "lease request failed; "
                        + ("calls fail open" if b.open else "calls spend only what the lease holds")
                        + " until the service answers",
                        err,
                    )
        except Exception as err:
            self.warn("lease request failed", err)
        return ok

    def _windows_granted(
        self, b: Book, asked: list[_WindowAsk], answers: list[Any], sent_at: float, ttl: float, epoch: int
    ) -> tuple[bool, bool]:
        """Records the service's answer for each window asked: a grant extends the slice's lifetime; a refusal
        holds further requests for that window back until it ends when no other holder holds any of it (nothing
        can come back before), else for a moment. Whether every window the waiting call was short of got
        something, and whether every one got all that was asked."""
        ok = full = True
        now = clock_now()
        for k, a in enumerate(asked):
            s = a.slice
            answer = answers[k] if k < len(answers) else None
            if not isinstance(answer, dict) or answer.get("dimension") != s.dimension:
                ok = ok and not a.short
                continue
            if not answer.get("limited"):
                s.unlimited_until = now + _UNLIMITED_FOR
                continue
            start = answer.get("window_start")
            if s.start is not None and (not isinstance(start, str) or parse_time(start) != s.start):
                ok = ok and not a.short
                continue
            added = s.unit_of(float(answer.get("added") or 0))
            if added > 0:
                s.granted = s.unit_of(float(answer.get("granted") or 0))
                s.deadline = sent_at + ttl
                s.retry_at = 0.0
                if epoch == b.epoch:
                    s.cap = a.cap
            else:
                if a.short:
                    ok = False
                if s.unit_of(float(answer.get("remaining") or 0)) <= 0 or self._balance(b, s, now) <= 0:
                    holders = int(answer.get("holders") or 0)
                    s.retry_at = s.end if holders == 0 and s.end != math.inf else now + _OPEN_RETRY
            if added < a.want:
                full = False
        return ok, full

    def take(self, e: UserEntry, n: LeaseNeed) -> str | GuardResult | None:
        """Takes a call's estimate from the lease: the lease id its event carries, or the hard gate of
        the budget it cannot cover. Asks ahead in the background when a slice runs low."""
        with self.lock:
            b = self._book(e)
            now = clock_now()
            b.last_use = now
            self._unit(b, n)
            if b.open:
                if not running(b.asking) and now - b.asked_at >= _OPEN_RETRY:
                    self.ask(e, n, waiting=False)
                return None
            short = self._short(e, b, n, now)
            if short is not None:
                return short
            b.spend.used = add_dollars(b.spend.used, n.cost)
            b.spend.took(n.cost, now)
            t = None if n.model is None else b.slice(n.model)
            if t is not None:
                t.used += n.tokens
                t.took(n.tokens, now)
            low_window = False
            margin = -1.0
            for w in n.windows:
                s = b.window(w)
                s.used += w.amount
                s.took(w.amount, now)
                if not low_window and now >= s.retry_at:
                    if margin < 0:
                        margin = self._renew_margin(b)
                    low_window = self._low(b, s, now) or now >= s.deadline - margin
            b.holds += 1
            if not running(b.asking):
                plan = e.config
                assert plan is not None
                spend_capped = plan.max_spend_per_period is not None
                period = spend_capped or t is not None
                low = (
                    low_window
                    or (spend_capped and self._low(b, b.spend, now))
                    or (t is not None and self._low(b, t, now))
                )
                # After a plan change the lease is renewed under the new caps once, in the background.
                if low or (period and now >= self._renew_at(b)) or (renewing(b) and b.asked_epoch != b.epoch):
                    self.ask(e, n, waiting=False)
            return b.lease_id

    def _unit(self, b: Book, n: LeaseNeed) -> None:
        """The largest estimate seen of each budget: the unit of what is asked for."""
        if n.cost > b.spend.unit:
            b.spend.unit = n.cost
        if n.model is not None:
            t = b.slice(n.model)
            if n.tokens > t.unit:
                t.unit = n.tokens
        for w in n.windows:
            s = b.window(w)
            if w.amount > s.unit:
                s.unit = w.amount

    def _low(self, b: Book, s: Slice, now: float) -> bool:
        return self._balance(b, s, now) < self._low_water(b, s, now)

    def _low_water(self, b: Book, s: Slice, now: float, waiting: int = 0) -> float:
        """Below this much left the next slice is asked for: _LOOKAHEAD round trips of the spend
        rate, and never less than one call per call in flight (a replica's concurrency)."""
        return max(s.unit * (b.holds + waiting + 1), _LOOKAHEAD * s.rate(now) * horizon(b))

    def _renew_at(self, b: Book) -> float:
        """From here on the lease is renewed (asked for more, which restarts its lifetime) before it lapses."""
        return b.deadline - self._renew_margin(b)

    def _renew_margin(self, b: Book) -> float:
        return max(_LOOKAHEAD * horizon(b), self.settings.ttl / 4)

    def unhold(
        self,
        user_id: str,
        lease_id: str | None,
        cost: float,
        model: str | None,
        tokens: float,
        windows: tuple[WindowNeed, ...] = NO_WINDOWS,
    ) -> None:
        """Gives a hold back (what take() took); the call's real usage, if it ran, comes through spend()."""
        with self.lock:
            b = self.books.get(user_id)
            if b is None or lease_id is None or b.lease_id != lease_id:
                return
            b.spend.used = max(0.0, add_dollars(b.spend.used, -cost))
            t = None if model is None else b.tokens.get(model)
            if t is not None:
                t.used = max(0.0, t.used - tokens)
            for w in windows:
                s = b.windows.get(w.key)
                if s is not None:
                    s.used = max(0.0, s.used - w.amount)
            b.holds = max(0, b.holds - 1)

    def spend(self, e: UserEntry, cost: float, model: str | None, tokens: int, at: float) -> str | None:
        """The usage of a metered call (reserved or recorded after the fact) is spent from the user's lease; the
        lease id its usage event carries, or None. Caller holds the client's lock."""
        with self.lock:
            b = self.books.get(e.user_id)
            if b is None or b.lease_id is None:
                return None
            b.spend.used = add_dollars(b.spend.used, cost)
            t = None if model is None else b.tokens.get(model)
            if t is not None:
                t.used += tokens
            # The windows its event counts in (its time's): a call held on one window and recorded in the next is
            # taken from the next one's slice, so what the service counts there stays within what this holder
            # was granted of it.
            if b.windows:
                for w in window_needs(e, model, ReservationAmount(cost, float(tokens), True), at):
                    b.window(w).used += w.amount
            return b.lease_id

    def renew(self, user_id: str) -> None:
        """The user's plan or subscription changed: the lease is asked for again, under the new caps, in
        the background by the next call. Meanwhile calls keep spending from the slice held while it is
        still valid under the caps in force (the user's view, reloaded after the change): in the same
        period, and no budget's cap lower than when the slice was asked for. Otherwise they wait for
        the new grant, as a first call does."""
        with self.lock:
            b = self.books.get(user_id)
            if b is not None:
                b.epoch += 1
                b.unlimited_until = 0.0

    def release_all(self, timeout: float) -> Flow[None]:
        deadline = time.monotonic() + timeout
        for b in list(self.books.values()):
            if time.monotonic() >= deadline:
                return
            yield from self._release(b, max(0.1, deadline - time.monotonic()))

    def release_idle(self) -> Flow[None]:
        now = clock_now()
        for b in list(self.books.values()):
            held = now < b.deadline or any(now < s.deadline and s.granted > s.used for s in b.windows.values())
            if (
                b.lease_id is not None
                and held
                and b.holds == 0
                and not running(b.asking)
                and now - b.last_use >= self.settings.idle
            ):
                yield from self._release(b, None)

    def _release(self, b: Book, timeout: float | None) -> Flow[None]:
        """The lease keeps what was used; the rest goes back to the user's pool."""
        with self.lock:
            now = clock_now()
            windows = [s for s in b.windows.values() if s.end > now]
            slices: list[Slice] = [b.spend, *b.tokens.values(), *windows]
            if b.lease_id is None or all(s.granted <= s.used for s in slices):
                return
            for s in slices:
                s.granted = s.used
            body: dict[str, Any] = {"used": b.spend.used}
            if b.tokens:
                body["used_tokens"] = {m: math.ceil(s.used) for m, s in b.tokens.items()}
            if windows:
                body["used_windows"] = [
                    {
                        "dimension": s.dimension,
                        "window_start": None if s.start is None else iso(s.start),
                        "used": s.wire(s.used),
                    }
                    for s in windows
                ]
            path = f"/users/{quote(b.user_id, safe='')}/leases/{b.lease_id}/release"
        try:
            yield Request("POST", path, body, timeout)
        except MeterError as err:
            if not (isinstance(err, MeterAPIError) and err.status == 404):
                self.warn(f"giving back the lease of {b.user_id} failed", err)

    def _short(self, e: UserEntry, b: Book, n: LeaseNeed, now: float) -> GuardResult | None:
        """The hard gate of the first budget the lease cannot cover, or None when it covers the call."""
        plan = e.config
        assert plan is not None
        if plan.max_spend_per_period is not None:
            left = self._balance(b, b.spend, now)
            if left <= 0 or (n.whole and left < n.cost):
                cap = plan.max_spend_per_period * plan.hard_gate_at
                return refusal(
                    e,
                    "total_spend",
                    add_dollars(e.period_cost, e.reserved_cost),
                    cap,
                    f"period spend cap of ${cap:.2f} reached: no budget lease covers this call "
                    f"(estimate ${n.cost:.4f}) across replicas",
                )
        if n.model is not None:
            t = b.tokens.get(n.model)
            left = self._balance(b, t, now) if t is not None else 0.0
            if left <= 0 or (n.whole and left < n.tokens):
                cap = plan.model_limits[n.model] * plan.hard_gate_at
                current = e.tokens_by_model.get(n.model, 0) + e.reserved_tokens.get(n.model, 0)
                return refusal(
                    e,
                    f"model_limit:{n.model}",
                    current,
                    cap,
                    f"token cap of {cap:g} for {n.model} reached: no budget lease covers this call "
                    f"({n.tokens:g} tokens) across replicas",
                )
        for w in n.windows:
            s = b.windows.get(w.key)
            if s is not None and now < s.unlimited_until:
                continue
            left = 0.0 if s is None else self._balance(b, s, now)
            if left <= 0 or (w.whole and left < w.amount):
                return window_refusal(e, w)
        return None

    def _exhausted(self, b: Book, n: LeaseNeed, now: float) -> bool:
        """A window the call needs is short and the service had nothing left of it when last asked."""
        for w in n.windows:
            s = b.windows.get(w.key)
            if s is None or now >= s.retry_at:
                continue
            left = self._balance(b, s, now)
            if left <= 0 or (w.whole and left < w.amount):
                return True
        return False

    def _asked(self, b: Book, s: Slice, need: float, now: float, renew: bool) -> tuple[float, float, bool]:
        """What a request asks of one budget: nothing while it covers the waiting call and holds its
        low-water mark (unless the lease is renewed); else the low-water mark plus ``lease_calls``
        calls and one per waiting call, times the boost; until a rate is measured, while grants are
        full, at least what the calls in flight or waiting spend in a planned round trip if each
        took _MIN_CALL."""
        left = self._balance(b, s, now)
        short = left <= 0 or left < need
        low = self._low_water(b, s, now, b.joined)
        if not short and left >= low and not renew:
            return 0.0, 0.0, short
        young = s.age(now) < RATE_TAU
        floor = s.unit * (b.holds + b.joined) * horizon(b) / _MIN_CALL if b.full and young else 0.0
        boost = b.boost if b.full else 1.0
        want = max(need, boost * (low + s.unit * (self.settings.calls + b.joined)), floor)
        return (need if short else 0.0), want, short

    def _balance(self, b: Book, s: Slice, now: float) -> float:
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

    def _granted(self, b: Book, epoch: int, caps: tuple[float | None, float | None], model: str | None) -> None:
        """Records a grant: the caps it was asked under (unknown when a plan change came while it was on
        its way). A grant asked under the new plan proves the dollars and the model's tokens it names
        within the new caps (the service counted what this holder holds); other models' token slices
        are not, so they are kept only as far as used, and asked for again."""
        current = epoch == b.epoch
        if current and renewing(b):
            for m, t in b.tokens.items():
                if m != model:
                    t.granted = min(t.granted, t.used)
        spend_cap, token_cap = caps
        b.spend.cap = (math.inf if spend_cap is None else spend_cap) if current else math.inf
        if model is not None:
            b.slice(model).cap = (math.inf if token_cap is None else token_cap) if current else math.inf
        if current:
            b.grant_epoch = epoch

    def _book(self, e: UserEntry) -> Book:
        b = self.books.get(e.user_id)
        if b is None:
            b = self.books[e.user_id] = Book(e.user_id, e)
        b.entry = e
        return b
