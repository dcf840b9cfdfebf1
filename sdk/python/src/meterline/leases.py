"""Budget leases (``leases=True``): the user's period spend cap, per-model token caps and the windows of the
plan's ``limits`` are spent from slices the service grants this process (``POST /users/{id}/leases``), so
that many replicas together never pass them, with no request per call: a call runs only when every slice it
touches covers it. The next slice is asked for ahead, in the background, while the current one still covers a
few round trips' worth of the measured spend rate: far from the cap no call waits for the network. The slices
are kept in lease_books.py, sized in lease_sizing.py and asked for in lease_requests.py; here they are spent and
given back."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .clock import now as clock_now
from .errors import MeterAPIError, MeterError
from .flow import Flow, Handle, Request, Wait, never_ran, running
from .lease_books import (
    Asked,
    Book,
    LeaseNeed,
    Slice,
    TeamBook,
    WindowSlice,
    finished,
    leased_team,
    member_window_cap_of,
    member_window_needs,
    refusal,
    renewing,
    spent_from,
    team_key,
    team_refusal,
    team_token_refusal,
    team_window_needs,
    window_cap_of,
    window_needs,
    window_refusal,
)
from .lease_requests import LeaseRequests
from .lease_sizing import balance, low, renew_at, renew_margin, spare, team_spares
from .lease_windows import OPEN_RETRY
from .money import add_dollars, fixed, gate_mark, js_number
from .periods import iso, parse_time
from .reservation import NO_WINDOWS, LeasePeriods, LeaseTaken, ReservationAmount, WindowNeed
from .types import GuardResult

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .state import UserEntry
    from .teams import TeamEntry


class Leases(LeaseRequests):
    def need(self, e: UserEntry, model: str | None, reserved: ReservationAmount) -> LeaseNeed | None:
        """What a call of ``model`` needs from the lease; None when nothing it spends is capped (or the user is not
        loaded). Caller holds the client's lock (the windows are brought to now)."""
        if not e.loaded:
            return None
        plan = e.config
        capped = model if plan is not None and model is not None and model in plan.model_limits else None
        now = clock_now()
        windows = window_needs(e, model, reserved, now) if plan is not None and plan.limits else NO_WINDOWS
        spend = plan is not None and plan.max_spend_per_period is not None
        team = leased_team(e)
        member_windows = member_window_needs(e, model, reserved, now)
        if not spend and capped is None and not windows and team is None and not member_windows:
            return None
        if team is not None:
            # Under the leases' lock: the delivery thread forgets books (and their team books) under it.
            with self.lock:
                unlimited_until = self._team_book(team, self._holder_of(e.user_id)).unlimited_until
            if now < unlimited_until:
                team = None
        team_cost = 0.0 if team is None else reserved.cost
        team_spend = team is not None and team.config is not None and team.config.max_spend_per_period is not None
        team_windows = NO_WINDOWS if team is None else team_window_needs(team, model, reserved, now)
        team_model = (
            model
            if team is not None and team.config is not None and model is not None and model in team.config.model_limits
            else None
        )
        team_tokens = 0.0 if team_model is None else reserved.tokens
        if now < self._book(e).unlimited_until:
            if team is None:
                return None
            return LeaseNeed(
                0.0,
                None,
                0.0,
                reserved.exact,
                NO_WINDOWS,
                False,
                team,
                team_cost,
                team_spend,
                team_windows,
                NO_WINDOWS,
                team_model,
                team_tokens,
            )
        if not spend and capped is None and not windows and team is None and not member_windows:
            return None
        return LeaseNeed(
            reserved.cost if spend else 0.0,
            capped,
            0.0 if capped is None else reserved.tokens,
            reserved.exact,
            windows,
            spend,
            team,
            team_cost,
            team_spend,
            team_windows,
            member_windows,
            team_model,
            team_tokens,
        )

    def covers(self, e: UserEntry, n: LeaseNeed) -> bool:
        with self.lock:
            b = self._book(e)
            return b.open or self._short(e, b, n, clock_now()) is None

    @contextmanager
    def waiting(self, e: UserEntry) -> Iterator[None]:
        """While a call may wait for the user's lease requests (asking) and then takes from the book (take): the
        book stays for it."""
        with self.lock:
            b = self._book(e)
            b.waits += 1
        try:
            yield
        finally:
            with self.lock:
                b.waits -= 1

    def asking(self, e: UserEntry, n: LeaseNeed) -> tuple[Handle, Asked] | None:
        """The lease request a call the lease does not cover waits for (its result: True when every short budget
        got something), and what that request asks (Asked: for this call; for what the slices lacked before the call
        came; for the team's slices, with another member's request); None when there is nothing to wait for: the
        lease covers the call, or a window it needs had nothing left at the service when last asked (the call is
        then refused without asking)."""
        with self.lock:
            b = self._book(e)
            now = clock_now()
            # In use while a call waits for it: an idle release would give back what the call waits for.
            b.last_use = now
            if n.team is not None:
                self._team_book(n.team, b.holder).last_use = now
            if b.open or self._short(e, b, n, now) is None or self._exhausted(b, n, now):
                return None
            # The team's slice is on its way with another member's request: that answer may cover this call.
            tb = None if n.team is None else self.teams.get(team_key(b.holder, n.team.team_id))
            if tb is not None and running(tb.asking) and tb.asking is not b.asking and self._team_short(tb, n, now):
                assert tb.asking is not None
                return tb.asking, "team"
            on_its_way = running(b.asking)
            return self.ask(e, n), "earlier" if on_its_way else "own"

    def take(self, e: UserEntry, n: LeaseNeed) -> LeaseTaken | GuardResult:
        """Takes a call's estimate from the lease: the lease id its event carries and the periods it was taken in, or
        the hard gate of the budget it cannot cover. Asks ahead in the background when a slice runs low."""
        with self.lock:
            b = self._book(e)
            now = clock_now()
            b.last_use = now
            self._estimates(b, n)
            if b.open:
                if not running(b.asking) and now - b.asked_at >= OPEN_RETRY:
                    self.ask(e, n, waiting=False)
                return LeaseTaken(None, None)
            short = self._short(e, b, n, now)
            if short is not None:
                return short
            b.spend.used = add_dollars(b.spend.used, n.cost)
            b.spend.took(n.cost, now)
            low_team = False
            # The team book whose slices may be offered back, should nothing else ask this turn (what they spare is
            # worked out only then).
            offer_from: TeamBook | None = None
            team_period = 0.0
            if n.team is not None:
                tb = self._team_book(n.team, b.holder)
                team_period = tb.period_end
                tb.spend.used = add_dollars(tb.spend.used, n.team_cost)
                tb.spend.took(n.team_cost, now)
                tb.holds += 1
                tb.last_use = now
                team_margin = renew_margin(tb, self.settings.ttl)
                low_windows = False
                for w in n.team_windows:
                    ts = tb.window(w)
                    ts.used += w.amount
                    ts.took(w.amount, now)
                    low_windows = low_windows or (
                        now >= ts.retry_at and (low(tb, ts, now) or now >= ts.deadline - team_margin)
                    )
                if n.team_model is not None:
                    tt = tb.slice(n.team_model)
                    tt.used += n.team_tokens
                    tt.took(n.team_tokens, now)
                    low_windows = low_windows or low(tb, tt, now) or now >= tb.deadline - team_margin
                low_spend = n.team_spend and (low(tb, tb.spend, now) or now >= tb.deadline - team_margin)
                # After a change of the team plan the team's slices are asked for again once, in the background.
                renew_team = renewing(tb) and tb.asked_epoch != tb.epoch
                low_team = not running(tb.asking) and now >= tb.retry_at and (low_spend or low_windows or renew_team)
                offers = n.team_spend or n.team_model is not None
                if offers and not low_team and not running(tb.asking) and b.lost_at == 0:
                    offer_from = tb
                # The lease id is the holder's: the event settles the team's slice with it (and the user's, when held).
                if b.lease_id is None:
                    b.lease_id = b.holder
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
                        margin = renew_margin(b, self.settings.ttl)
                    low_window = low(b, s, now) or now >= s.deadline - margin
            for w in n.member_windows:
                ms = b.member_window(w)
                ms.used += w.amount
                ms.took(w.amount, now)
                if not low_window and now >= ms.retry_at:
                    low_window = low(b, ms, now) or now >= ms.deadline - renew_margin(b, self.settings.ttl)
            # A call that spends from no lease (every budget it touches unlimited for now) holds nothing: unhold()
            # gives back only what names the lease, so such a hold would never be let go.
            if b.lease_id is not None:
                b.holds += 1
            if not running(b.asking):
                spend_capped = n.spend
                period = spend_capped or t is not None
                running_low = (
                    low_window
                    or low_team
                    or (spend_capped and low(b, b.spend, now))
                    or (t is not None and low(b, t, now))
                )
                # After a plan change the lease is renewed under the new caps once, in the background.
                if (
                    running_low
                    or (period and now >= renew_at(b, self.settings.ttl))
                    or (renewing(b) and b.asked_epoch != b.epoch)
                ):
                    self.ask(e, n, waiting=False)
                elif (offer_from is not None and team_spares(offer_from, n.team_model, now)) or (
                    now >= b.spare_at
                    and ((spend_capped and spare(b, b.spend, now) > 0) or (t is not None and spare(b, t, now) > 0))
                ):
                    # What the slices hold beyond their needs is offered back (lease_sizing.spare).
                    self.ask(e, n, waiting=False)
            return LeaseTaken(b.lease_id, LeasePeriods(b.period_end, team_period))

    def unhold(
        self,
        user_id: str,
        lease_id: str | None,
        cost: float,
        model: str | None,
        tokens: float,
        windows: tuple[WindowNeed, ...] = NO_WINDOWS,
        team: TeamEntry | None = None,
        team_windows: tuple[WindowNeed, ...] = NO_WINDOWS,
        member_windows: tuple[WindowNeed, ...] = NO_WINDOWS,
        periods: LeasePeriods | None = None,
    ) -> None:
        """Gives a hold back (what take() took, in ``periods``); the call's real usage, if it ran, comes through
        spend()."""
        with self.lock:
            # The lease id is the holder id of the book that took the hold.
            tb = None if team is None or lease_id is None else self.teams.get(team_key(lease_id, team.team_id))
            if tb is not None:
                # Taken in a period that has ended: the new period's slices never held it.
                if periods is None or periods.team == tb.period_end:
                    tb.spend.used = max(0.0, add_dollars(tb.spend.used, -cost))
                    tt = None if model is None else tb.tokens.get(model)
                    if tt is not None:
                        tt.used = max(0.0, tt.used - tokens)
                _give_back(tb.windows, team_windows)
                tb.holds = max(0, tb.holds - 1)
            b = self.books.get(user_id)
            if b is None or lease_id is None or b.lease_id != lease_id:
                return
            if periods is None or periods.user == b.period_end:
                b.spend.used = max(0.0, add_dollars(b.spend.used, -cost))
                t = None if model is None else b.tokens.get(model)
                if t is not None:
                    t.used = max(0.0, t.used - tokens)
            _give_back(b.windows, windows)
            _give_back(b.member_windows, member_windows)
            b.holds = max(0, b.holds - 1)

    def spend(self, e: UserEntry, cost: float, model: str | None, tokens: int, at: float) -> str | None:
        """The usage of a metered call (reserved or recorded after the fact) is spent from the user's lease; the
        lease id its usage event carries, or None. Caller holds the client's lock."""
        with self.lock:
            b = self.books.get(e.user_id)
            team = leased_team(e)
            holder = self.holder if b is None else b.holder
            tb = None if team is None else self.teams.get(team_key(holder, team.team_id))
            # Spent from the team's slices once one was granted (its event names the holder, which settles them).
            team_lease = holder if tb is not None and tb.leased else None
            if tb is not None and team is not None and team_lease is not None:
                spent_from(tb, cost, model, tokens)
                # The team's windows at the event's time, as the user's below.
                if tb.windows:
                    for w in team_window_needs(team, model, ReservationAmount(cost, float(tokens), True), at):
                        finished(tb.window(w), w.amount)
            if b is None or b.lease_id is None:
                return team_lease
            spent_from(b, cost, model, tokens)
            # The windows its event counts in (its time's): a call held on one window and recorded in the next is
            # taken from the next one's slice, so what the service counts there stays within what this holder
            # was granted of it.
            if b.windows:
                for w in window_needs(e, model, ReservationAmount(cost, float(tokens), True), at):
                    finished(b.window(w), w.amount)
            if b.member_windows:
                for w in member_window_needs(e, model, ReservationAmount(cost, float(tokens), True), at):
                    finished(b.member_window(w), w.amount)
            return b.lease_id

    def renew(self, user_id: str, team_id: str | None = None) -> None:
        """The user's plan or subscription changed: the lease is asked for again, under the new caps, in
        the background by the next call. Meanwhile calls keep spending from the slice held while it is
        still valid under the caps in force (the user's view, reloaded after the change): in the same
        period, and no budget's cap lower than when the slice was asked for. Otherwise they wait for
        the new grant, as a first call does. ``team_id``: the member's team, whose slices are renewed the
        same way (its plan, or its subscription, may be what changed)."""
        with self.lock:
            b = self.books.get(user_id)
            tb = None if team_id is None else self.teams.get(team_key(self.holder if b is None else b.holder, team_id))
            if tb is not None:
                tb.epoch += 1
                tb.unlimited_until = tb.retry_at = 0.0
                for ts in tb.windows.values():
                    ts.retry_at = 0.0
            if b is not None:
                b.epoch += 1
                b.unlimited_until = 0.0
                # A window refused under the old limits may have room under the new ones.
                for s in (*b.windows.values(), *b.member_windows.values()):
                    s.retry_at = 0.0

    def release_all(self, timeout: float) -> Flow[None]:
        deadline = time.monotonic() + timeout
        # Requests asked ahead and not answered yet first: what they are granted goes back with the rest.
        for b in list(self.books.values()):
            if b.asking is not None and running(b.asking) and time.monotonic() < deadline:
                yield Wait(b.asking, max(0.1, deadline - time.monotonic()))
        # Together, as many at once as the client runs in the background (Meter's load workers, AsyncMeter's loop):
        # one after another, a slow route gave back only the first few within the time, and the rest stayed locked
        # away from other replicas until they lapsed. Where nothing runs flows in the background (the interpreter's
        # exit), one after another here. Each takes its timeout from the deadline when it starts, and those not
        # started by the deadline are dropped: nothing is left to run after shutdown() returns.
        handles = []
        for b in list(self.books.values()):
            if time.monotonic() >= deadline:
                break
            h = self.spawn(self._release_by(b, deadline))
            if never_ran(h):
                yield from self._release_by(b, deadline)
            else:
                handles.append(h)
        for h in handles:
            if running(h) and time.monotonic() < deadline:
                yield Wait(h, max(0.1, deadline - time.monotonic()))
        for h in handles:
            h.cancel()
        # Team slices no member's release took back (their member's team changed meanwhile).
        for tb in list(self.teams.values()):
            via = None if tb.via is None else self.books.get(tb.via)
            if via is not None and self._team_idle(tb) and time.monotonic() < deadline:
                yield from self._release(via, max(0.1, deadline - time.monotonic()))

    def release_idle(self) -> Flow[None]:
        now = clock_now()
        for b in list(self.books.values()):
            # Calls still running on a lease that nears its end (a call longer than its lifetime): asked again, the
            # service keeps it (and their estimates) for another lifetime, even with nothing more to grant; else it
            # lapsed under them and another replica was granted it.
            if (
                b.holds > 0
                and b.lease_id is not None
                and not b.open
                and not running(b.asking)
                and self._nears_end(b, now)
            ):
                self.ask(b.entry, LeaseNeed(0.0, None, 0.0, False, team=leased_team(b.entry)), waiting=False)
                continue
            held = now < b.deadline or self._holds_unused(b, now) or b.lost_at > 0
            if (
                (b.lease_id is not None or b.lost_at > 0)
                and held
                and b.holds == 0
                and not running(b.asking)
                and now - b.last_use >= self.settings.idle
            ):
                yield from self._release(b, None, idle=True)
        for tb in list(self.teams.values()):
            via = None if tb.via is None else self.books.get(tb.via)
            if via is not None and self._team_idle(tb) and now - tb.last_use >= self.settings.idle:
                yield from self._release(via, None, idle=True)
        with self.lock:
            later = clock_now()
            for b in list(self.books.values()):
                if self._forgettable(b, later):
                    self._forget(b)
            for key, tb in list(self.teams.items()):
                if tb.shared and self._team_forgettable(tb, later):
                    del self.teams[key]

    @staticmethod
    def _holds_unused(b: Book, now: float) -> bool:
        """The book holds something granted and not used that the service may still count for its holder: its spend
        or token slices before the lease's end, its window slices before theirs. A shared holder's past the lease's
        end too: the service keeps a lapsed lease for a grace period, and the next book under that holder would find
        it there (adopted())."""
        if b.lease_id is None:
            return False
        return _holds(b, now, (*b.windows.values(), *b.member_windows.values()))

    @staticmethod
    def _team_holds(tb: TeamBook, now: float) -> bool:
        """The same of a team book."""
        return _holds(tb, now, tb.windows.values())

    def _team_forgettable(self, tb: TeamBook, now: float) -> bool:
        """A team book under this process's holder goes on the same terms, once idle (given back through a member's
        lease). What it holds can go back only through the lease of a member of the team: with none left to do it
        (the last one moved to another team), it goes once its slices ended, and the service lets them lapse."""
        if tb.holds > 0 or running(tb.asking) or now - tb.last_use < self.settings.idle:
            return False
        if not self._team_holds(tb, now):
            return True
        via = None if tb.via is None else self.books.get(tb.via)
        team = None if via is None else leased_team(via.entry)
        if team is not None and team.team_id == tb.team_id:
            return False
        return now >= tb.deadline and all(now >= s.deadline for s in tb.windows.values())

    def _forgettable(self, b: Book, now: float) -> bool:
        """A book goes once no call runs on it or waits for it, it has been idle for ``lease_idle``, and it holds
        nothing unused (release_idle gave it back), nor does a team book it gives back (under its holder, or through
        its lease): an idle user costs this process nothing, however many users it served. A member's book made
        again finds what this one held (adopted())."""
        if b.holds > 0 or b.waits > 0 or running(b.asking) or b.lost_at > 0 or now - b.last_use < self.settings.idle:
            return False
        if self._holds_unused(b, now):
            return False

        def busy(tb: TeamBook) -> bool:
            return tb.holds > 0 or running(tb.asking) or self._team_holds(tb, now)

        team = leased_team(b.entry)
        tb = None if team is None else self.teams.get(team_key(b.holder, team.team_id))
        if tb is not None and tb.via == b.user_id and busy(tb):
            return False
        return not any(busy(self.teams[key]) for key in self.teams_of.get(b.holder, ()))

    def _forget(self, b: Book) -> None:
        del self.books[b.user_id]
        for key in self.teams_of.pop(b.holder, ()):
            del self.teams[key]

    def _nears_end(self, b: Book, now: float) -> bool:
        """The lease, or a slice the next request would ask for (a window still running, not held back, still
        limited), is within its renewal margin of its end. Only before the end: an answer moves it on, and once past
        it nothing asks again each tick (the service keeps a lease for a grace period, and a lapsed one is asked
        anew by the next call)."""
        margin = renew_margin(b, self.settings.ttl)

        def near(deadline: float, m: float = margin) -> bool:
            return deadline > 0 and deadline - m <= now < deadline

        def asked(s: WindowSlice, cap: float | None) -> bool:
            held = now >= s.retry_at and now >= s.unlimited_until
            return s.granted > 0 and now < s.end and held and cap is not None and near(s.deadline)

        # The team's slice too: a member whose own plan caps nothing holds no lease of its own to renew, and the
        # team's would lapse under its running call (its request carries the team's ask).
        team = leased_team(b.entry)
        tb = None if team is None else self.teams.get(team_key(b.holder, team.team_id))
        team_near = (
            tb is not None
            and tb.holds > 0
            and not running(tb.asking)
            and near(tb.deadline, renew_margin(tb, self.settings.ttl))
        )
        return (
            near(b.deadline)
            or team_near
            or any(asked(s, window_cap_of(b.entry, s.dimension)) for s in b.windows.values())
            or any(asked(s, member_window_cap_of(b.entry, s.dimension)) for s in b.member_windows.values())
        )

    def _team_idle(self, tb: TeamBook) -> bool:
        """No call holds on the team's slices, none asks for them, and one holds something unused."""
        if tb.holds != 0 or running(tb.asking):
            return False
        slices = (tb.spend, *tb.tokens.values(), *_live(tb.windows, clock_now()))
        return any(s.granted > s.used for s in slices)

    def _team_tokens_short(self, tb: TeamBook, n: LeaseNeed, now: float) -> bool:
        tt = None if n.team_model is None else tb.tokens.get(n.team_model)
        left = 0.0 if tt is None else balance(tb, tt, now)
        return left <= 0 or (n.whole and left < n.team_tokens)

    def _team_spend_short(self, tb: TeamBook, n: LeaseNeed, now: float) -> bool:
        left = balance(tb, tb.spend, now)
        return left <= 0 or (n.whole and left < n.team_cost)

    def _team_short(self, tb: TeamBook, n: LeaseNeed, now: float) -> bool:
        """The team's slices do not cover the call: its spend slice or one of its windows'."""
        if n.team_spend and self._team_spend_short(tb, n, now):
            return True
        if n.team_model is not None and self._team_tokens_short(tb, n, now):
            return True
        return next(_uncovered(tb, tb.windows, n.team_windows, now), None) is not None

    def _release_by(self, b: Book, deadline: float) -> Flow[None]:
        """_release with what is left of ``deadline`` (time.monotonic) when it starts; nothing once it has passed."""
        left = deadline - time.monotonic()
        if left > 0:
            yield from self._release(b, max(0.1, left))

    def _release(self, b: Book, timeout: float | None, *, idle: bool = False) -> Flow[None]:
        """The lease keeps what was used; the rest goes back to the user's pool, including what a request whose answer
        was lost may have been granted (the lease id is the holder id)."""
        # One request per book at a time, a release included: a grant the service wrote while the release was on its
        # way would be overwritten by it (it sets the lease to what was used), and spent here while another replica
        # is granted the same money.
        deadline = None if timeout is None else time.monotonic() + timeout
        while (asking := b.asking) is not None and running(asking):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            yield Wait(asking, left)
        with self.lock:
            now = clock_now()
            # Given back for idleness, decided before that request's answer: not if a call took from the book or waited
            # for it since (the answer may be what that call is about to take).
            if idle and (b.holds > 0 or b.waits > 0 or now - b.last_use < self.settings.idle):
                return
            windows = _live(b.windows, now)
            member_windows = _live(b.member_windows, now)
            slices: list[Slice] = [b.spend, *b.tokens.values(), *windows, *member_windows]
            # The team's slice goes back with a member's lease once no call of any member holds on it.
            team = leased_team(b.entry)
            tb = None if team is None else self.teams.get(team_key(b.holder, team.team_id))
            team_back = tb is not None and self._team_idle(tb) and not (idle and now - tb.last_use < self.settings.idle)
            if not team_back and b.lost_at == 0 and (b.lease_id is None or all(s.granted <= s.used for s in slices)):
                return
            b.lost_at = 0.0
            # A shared holder's slice no answer told of: what this book used of it is not what the holder holds
            # (adopted()).
            if not _told(b, b.spend):
                return
            for s in slices:
                s.granted = s.used
            body: dict[str, Any] = {"used": b.spend.used}
            if tb is not None and team_back:
                if (
                    team is not None
                    and team.config is not None
                    and team.config.max_spend_per_period is not None
                    and _told(tb, tb.spend)
                ):
                    body["team_used"] = tb.spend.used
                tb.spend.granted = tb.spend.used
                if team_tokens := {m: math.ceil(s.used) for m, s in tb.tokens.items() if _told(tb, s)}:
                    body["team_used_tokens"] = team_tokens
                for s in tb.tokens.values():
                    s.granted = s.used
                team_windows = _live(tb.windows, now)
                for s in team_windows:
                    s.granted = s.used
                if told_windows := [_used(s) for s in team_windows if _told(tb, s)]:
                    body["team_used_windows"] = told_windows
            if tokens := {m: math.ceil(s.used) for m, s in b.tokens.items() if _told(b, s)}:
                body["used_tokens"] = tokens
            if told := [_used(s) for s in windows if _told(b, s)]:
                body["used_windows"] = told
            if told_members := [_used(s) for s in member_windows if _told(b, s)]:
                body["used_member_windows"] = told_members
            path = f"/users/{quote(b.user_id, safe='')}/leases/{b.lease_id or b.holder}/release"
            # Meanwhile the book's next request, and the team's next ask by any member, wait for it (ask()).
            releasing: Future[None] = Future()
            b.asking = releasing
            if tb is not None and team_back:
                tb.asking = releasing
        try:
            yield Request("POST", path, body, None if deadline is None else max(0.1, deadline - time.monotonic()))
        except MeterError as err:
            if not (isinstance(err, MeterAPIError) and err.status == 404):
                self.warn(f"giving back the lease of {b.user_id} failed", err)
        finally:
            with self.lock:
                if b.asking is releasing:
                    b.asking = None
                if tb is not None and tb.asking is releasing:
                    tb.asking = None
            releasing.set_result(None)

    def _short(self, e: UserEntry, b: Book, n: LeaseNeed, now: float) -> GuardResult | None:
        """The hard gate of the budgets the lease cannot cover, or None when it covers the call: of several, the one
        that allows a call again last (BUDGETS.md §1), as the local check names it."""
        refused: list[GuardResult] = []
        if n.team is not None:
            tb = self.teams.get(team_key(b.holder, n.team.team_id))
            if n.team_spend and (tb is None or self._team_spend_short(tb, n, now)):
                refused.append(team_refusal(n.team, n.team_cost))
            if n.team_model is not None and (tb is None or self._team_tokens_short(tb, n, now)):
                refused.append(team_token_refusal(n.team, n.team_model, n.team_tokens))
            for w in n.team_windows if tb is None else _uncovered(tb, tb.windows, n.team_windows, now):
                assert n.team.config is not None
                refused.append(window_refusal(n.team.config, n.team.counters, w, "team:"))
        if not n.spend and n.model is None and not n.windows:
            return _lifts_last(refused + _member_refusals(e, b, n, now))
        plan = e.config
        assert plan is not None
        if n.spend and plan.max_spend_per_period is not None:
            left = balance(b, b.spend, now)
            if left <= 0 or (n.whole and left < n.cost):
                cap = gate_mark(plan.max_spend_per_period, plan.hard_gate_at)
                refused.append(
                    refusal(
                        e,
                        "total_spend",
                        add_dollars(e.period_cost, e.reserved_cost),
                        cap,
                        f"period spend cap of ${fixed(cap, 2)} reached: no budget lease covers this call "
                        f"(estimate ${fixed(n.cost, 4)}) across replicas",
                    )
                )
        if n.model is not None:
            t = b.tokens.get(n.model)
            left = balance(b, t, now) if t is not None else 0.0
            if left <= 0 or (n.whole and left < n.tokens):
                cap = plan.model_limits[n.model] * plan.hard_gate_at
                current = e.tokens_by_model.get(n.model, 0) + e.reserved_tokens.get(n.model, 0)
                refused.append(
                    refusal(
                        e,
                        f"model_limit:{n.model}",
                        current,
                        cap,
                        f"token cap of {js_number(cap)} for {n.model} reached: no budget lease covers this call "
                        f"({js_number(n.tokens)} tokens) across replicas",
                    )
                )
        for w in _uncovered(b, b.windows, n.windows, now):
            refused.append(window_refusal(plan, e.counters, w))
        # The member's windows of the team plan last, as the TypeScript client lists them: of refusals that lift at
        # the same time the first is named, so both libraries name the same one.
        return _lifts_last(refused + _member_refusals(e, b, n, now))

    def _exhausted(self, b: Book, n: LeaseNeed, now: float) -> bool:
        """A window (or the team's cap) the call needs is short and the service had nothing left of it when last
        asked."""
        if n.team is not None:
            tb = self.teams.get(team_key(b.holder, n.team.team_id))
            if tb is not None and now < tb.retry_at and n.team_spend and self._team_spend_short(tb, n, now):
                return True
            if tb is not None and _exhausted(tb, tb.windows, n.team_windows, now):
                return True
        return _exhausted(b, b.windows, n.windows, now) or _exhausted(b, b.member_windows, n.member_windows, now)


def _exhausted(b: Book | TeamBook, slices: dict[str, WindowSlice], needs: tuple[WindowNeed, ...], now: float) -> bool:
    """A window a call needs is short and the service had nothing left of it when last asked."""
    for w in needs:
        s = slices.get(w.key)
        if s is None or now >= s.retry_at:
            continue
        left = balance(b, s, now)
        # Refused without asking only when what the service had left cannot cover the call either.
        if (left <= 0 or (w.whole and left < w.amount)) and (
            s.left_at_service <= 0 or (w.whole and s.left_at_service < w.amount)
        ):
            return True
    return False


def _give_back(slices: dict[str, WindowSlice], needs: tuple[WindowNeed, ...]) -> None:
    """A hold's amounts given back to the window slices it was taken from."""
    for w in needs:
        s = slices.get(w.key)
        if s is not None:
            s.used = max(0.0, s.used - w.amount)


def _holds(b: Book | TeamBook, now: float, windows: Iterable[WindowSlice]) -> bool:
    """Leases._holds_unused of a user's book or a team's, with its window slices."""
    unused = any(s.granted > s.used for s in (b.spend, *b.tokens.values()))
    return ((b.shared or now < b.deadline) and unused) or any(
        (now < s.end if b.shared else now < s.deadline) and s.granted > s.used for s in windows
    )


def _told(b: Book | TeamBook, s: Slice) -> bool:
    """A release names the slice: an answer told what a shared holder holds of it (adopted())."""
    return not b.shared or s.answered


def _live(slices: dict[str, WindowSlice], now: float) -> list[WindowSlice]:
    """The slices of windows that have not ended."""
    return [s for s in slices.values() if s.end > now]


def _used(s: WindowSlice) -> dict[str, Any]:
    """A slice as a release names what was used of it."""
    return {"dimension": s.dimension, "window_start": None if s.start is None else iso(s.start), "used": s.wire(s.used)}


def _member_refusals(e: UserEntry, b: Book, n: LeaseNeed, now: float) -> list[GuardResult]:
    """The member's windows of the team plan (scope member) the lease cannot cover."""
    out: list[GuardResult] = []
    for w in _uncovered(b, b.member_windows, n.member_windows, now):
        assert e.team is not None and e.team.config is not None
        out.append(window_refusal(e.team.config, e.member_counters, w, "team:"))
    return out


def _uncovered(
    book: Book | TeamBook, slices: dict[str, WindowSlice], needs: Iterable[WindowNeed], now: float
) -> Iterator[WindowNeed]:
    """The window needs of a call that the book's slices do not cover (a slice unlimited for now covers any)."""
    for w in needs:
        s = slices.get(w.key)
        if s is not None and now < s.unlimited_until:
            continue
        left = 0.0 if s is None else balance(book, s, now)
        if left <= 0 or (w.whole and left < w.amount):
            yield w


def _lifts_last(refused: list[GuardResult]) -> GuardResult | None:
    """Of refusals, the one that allows a call again last: a None resets_at (never by itself) is latest; ties keep
    the first."""
    last: GuardResult | None = None
    last_at = 0.0
    for r in refused:
        at = math.inf if r.resets_at is None else parse_time(r.resets_at)
        if last is None or at > last_at:
            last, last_at = r, at
    return last
