"""Asking the service for a budget lease's slices (``POST /users/{id}/leases``) and recording its answers: one
request per user at a time, asking for every budget that runs low, is short for the waiting call or nears the end of
its lifetime (lease_sizing.py says how much); a grant fills the slices of the user's Book (lease_books.py), a
refusal holds further requests back, a failure fails open or spends only what is held (``lease_fallback``).
leases.py spends the slices."""

from __future__ import annotations

import math
import re
import threading
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .clock import now as clock_now
from .errors import MeterAPIError, MeterError
from .flow import Flow, Handle, Request, running
from .lease_books import (
    Book,
    LeaseNeed,
    LeaseSettings,
    TeamBook,
    adopted,
    cap_of,
    estimated,
    leased_team,
    member_window_cap_of,
    renewing,
    round_trip,
    spend_cap_with_credits,
    team_cap_of,
    team_key,
    team_token_cap_of,
    team_window_cap_of,
    window_cap_of,
)
from .lease_sizing import asked, balance, renew_at, renew_margin, spare, spared
from .lease_windows import OPEN_RETRY, UNLIMITED_FOR, WindowAsk, window_asks, window_wire, windows_granted
from .money import add_dollars
from .periods import parse_time

if TYPE_CHECKING:
    from collections.abc import Callable

    from .state import UserEntry
    from .teams import TeamEntry

# While grants are full, each grant that finds calls waiting doubles what the next requests ask
# for, up to this factor: the measured rate lags a replica's start.
_MAX_BOOST = 8.0


class LeaseRequests:
    """The lease requests of one client (its holder id) and the Books they fill, one per user."""

    def __init__(
        self,
        settings: LeaseSettings,
        warn: Callable[[str, BaseException | None], None],
        spawn: Callable[[Flow[Any]], Handle],
    ) -> None:
        self.settings = settings
        self.warn = warn
        # Starts a lease request in the background (the client's thread pool, or a task on its event loop).
        self.spawn = spawn
        # This process as a lease holder: the holder of its team members' books.
        self.holder = f"h_{uuid.uuid4().hex}"
        # Books made with a holder id of their own (_book()).
        self.made = 0
        self.books: dict[str, Book] = {}
        # This process's slices of teams' spend caps, by team_key(holder, team id).
        self.teams: dict[str, TeamBook] = {}
        # The keys of ``teams`` under a book's own holder id (not this process's), by that holder.
        self.teams_of: dict[str, set[str]] = {}
        self.requests = 0
        # Calls that waited for a lease request's answer (MeterStats.lease_waits).
        self.waits = 0
        self.warned = False
        self.lock = threading.RLock()

    def count_wait(self) -> None:
        """A call waits for a lease request's answer: what it holds does not cover it."""
        with self.lock:
            self.waits += 1

    def after_fork(self) -> None:
        """A forked child is another holder: the parent's slices stay the parent's to spend."""
        self.holder = f"h_{uuid.uuid4().hex}"
        self.books = {}
        self.teams = {}
        self.teams_of = {}
        self.lock = threading.RLock()

    def ask(self, e: UserEntry, n: LeaseNeed, waiting: bool = True) -> Handle:
        """Asks for more (one request per user at a time); its result is True when every short budget got something.
        ``waiting``: a call waits for the answer (else it is asked ahead, from take())."""
        with self.lock:
            b = self._book(e)
            self._estimates(b, n)
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
            renew = sent_at >= renew_at(b, self.settings.ttl) or b.open or renewing(b)
            # Only a whole need is the least worth granting: a typical call is covered by any slice, and its
            # first call's estimate may be more than the cap has left.
            spend = (
                (0.0, 0.0, False)
                if caps[0] is None
                else asked(
                    b,
                    b.spend,
                    n.cost if n.whole else 0.0,
                    sent_at,
                    renew,
                    self.settings.calls,
                    spend_cap_with_credits(e),
                )
            )
            body: dict[str, Any] = {
                "holder": b.holder,
                "need": spend[0],
                "want": spend[1],
                "ttl_ms": int(self.settings.ttl * 1000),
            }
            # What the spend slice holds beyond a round trip's needs is offered back, unspent until the answer comes.
            spare_dollars = spare(b, b.spend, sent_at) if caps[0] is not None and spend[0] == 0 else 0.0
            if spare_dollars > 0:
                body["spare"] = spare_dollars
                b.spend.granted = add_dollars(b.spend.granted, -spare_dollars)
            spare_tokens = 0
            windows = window_asks(self.settings, b, b.windows, n.windows, lambda d: window_cap_of(e, d), sent_at, renew)
            if windows:
                body["windows"] = window_wire(windows)
            # The same for the member-scope windows of the user's team plan.
            members = window_asks(
                self.settings,
                b,
                b.member_windows,
                n.member_windows,
                lambda d: member_window_cap_of(e, d),
                sent_at,
                renew,
            )
            if members:
                body["member_windows"] = window_wire(members)
            tok: tuple[float, float, bool] | None = None
            if n.model is not None:
                tok = asked(
                    b, b.slice(n.model), n.tokens if n.whole else 0.0, sent_at, renew, self.settings.calls, caps[1]
                )
                body.update(model=n.model, need_tokens=math.ceil(tok[0]), want_tokens=math.ceil(tok[1]))
                if caps[1] is not None and tok[0] == 0:
                    ts = b.slice(n.model)
                    spare_tokens = int(spare(b, ts, sent_at))
                    if spare_tokens > 0:
                        body["spare_tokens"] = spare_tokens
                        ts.granted -= spare_tokens
            # The team's slice, unless another member's request is asking for it.
            team = leased_team(e)
            tb = None if team is None else self._team_book(team, b.holder)
            team_ask: tuple[float, float, bool] | None = None
            team_tok: tuple[float, float, bool] | None = None
            team_windows: list[WindowAsk] = []
            team_spare = 0.0
            team_spare_tokens = 0
            team_caps: tuple[float | None, float | None] = (None, None)
            team_epoch = 0 if tb is None else tb.epoch
            # Held back after a refusal, unless calls run on the slice and it nears its end: renewed, the service
            # keeps their estimates from lapsing under them.
            late = tb is not None and sent_at >= tb.deadline - renew_margin(tb, self.settings.ttl)
            renewing_held = tb is not None and late and tb.holds > 0 and sent_at < tb.deadline
            if (
                team is not None
                and tb is not None
                and not running(tb.asking)
                and (sent_at >= tb.retry_at or renewing_held)
                and sent_at >= tb.unlimited_until
            ):
                tb.joined = b.joined
                team_cap = team_cap_of(team)
                # After a change of the team plan, every slice is asked for again under its caps.
                renew_team = b.open or renewing(tb)
                team_ask = (
                    (0.0, 0.0, False)
                    if team_cap is None
                    else asked(
                        tb,
                        tb.spend,
                        n.team_cost if n.whole else 0.0,
                        sent_at,
                        late or renew_team,
                        self.settings.calls,
                        team_cap,
                    )
                )
                team_windows = window_asks(
                    self.settings,
                    tb,
                    tb.windows,
                    n.team_windows,
                    lambda d: team_window_cap_of(team, d),
                    sent_at,
                    renew_team,
                )
                token_cap = None if n.team_model is None else team_token_cap_of(team, n.team_model)
                team_caps = (team_cap, token_cap)
                if n.team_model is not None and token_cap is not None:
                    team_tok = asked(
                        tb,
                        tb.slice(n.team_model),
                        n.team_tokens if n.whole else 0.0,
                        sent_at,
                        late or renew_team,
                        self.settings.calls,
                        token_cap,
                    )
                    if team_tok[1] <= 0:
                        team_tok = None
                # What the team's spend slice holds beyond two round trips' needs is offered back too, unspent until
                # the answer comes; and what its slice of the model's team token cap holds beyond them.
                if team_cap is not None and team_ask[0] == 0 and not b.open and b.lost_at == 0:
                    team_spare = spare(tb, tb.spend, sent_at)
                if (
                    n.team_model is not None
                    and token_cap is not None
                    and (team_tok is None or team_tok[0] == 0)
                    and not b.open
                    and b.lost_at == 0
                ):
                    team_spare_tokens = int(spare(tb, tb.slice(n.team_model), sent_at))
                if team_ask[1] > 0 or team_windows or team_tok is not None or team_spare > 0 or team_spare_tokens > 0:
                    body["team"] = {"need": team_ask[0], "want": team_ask[1]}
                    if team_spare > 0:
                        body["team"]["spare"] = team_spare
                        tb.spend.granted = add_dollars(tb.spend.granted, -team_spare)
                    if team_spare_tokens > 0 and n.team_model is not None:
                        body["team"].update(model=n.team_model, spare_tokens=team_spare_tokens)
                        tb.slice(n.team_model).granted -= team_spare_tokens
                    if team_windows:
                        body["team"]["windows"] = window_wire(team_windows)
                    if team_tok is not None:
                        body["team"].update(
                            model=n.team_model, need_tokens=math.ceil(team_tok[0]), want_tokens=math.ceil(team_tok[1])
                        )
                else:
                    team_ask = None
            b.joined = 0
            self.requests += 1
            # Its end is read from the handle (done()), so a request that ends before this line is no harm.
            b.asking = self.spawn(
                self._request(
                    e,
                    b,
                    n,
                    body,
                    spend,
                    tok,
                    (windows, members),
                    sent_at,
                    epoch,
                    caps,
                    tb if team_ask else None,
                    team_ask,
                    team_windows,
                    team_tok,
                    (spare_dollars, spare_tokens),
                    (team_spare, team_spare_tokens),
                    (team_epoch, team_caps),
                )
            )
            if tb is not None and team_ask is not None:
                tb.asking = b.asking
                tb.asked_epoch = team_epoch
            return b.asking

    def _request(
        self,
        e: UserEntry,
        b: Book,
        n: LeaseNeed,
        body: dict[str, Any],
        spend: tuple[float, float, bool],
        tok: tuple[float, float, bool] | None,
        asked_windows: tuple[list[WindowAsk], list[WindowAsk]],
        sent_at: float,
        epoch: int,
        caps: tuple[float | None, float | None],
        tb: TeamBook | None = None,
        team_ask: tuple[float, float, bool] | None = None,
        team_windows: list[WindowAsk] | None = None,
        team_tok: tuple[float, float, bool] | None = None,
        offered: tuple[float, int] = (0.0, 0),
        team_offered: tuple[float, int] = (0.0, 0),
        team_under: tuple[int, tuple[float | None, float | None]] = (0, (None, None)),
    ) -> Flow[bool]:
        # The user's own windows and the member-scope ones of its team plan, each answered in its own list.
        windows, members = asked_windows
        renewed = not asks_need(body)
        ok = False
        try:
            res = yield Request("POST", f"/users/{quote(b.user_id, safe='')}/leases", body)
            with self.lock:
                round_trip(b, max(0.0, clock_now() - sent_at))
                b.open = False
                lease = res.get("lease") if isinstance(res, dict) else None
                if offered != (0.0, 0):
                    answer = lease if isinstance(lease, dict) and res.get("limited") else None
                    spared(b, n.model, offered, answer, self.settings.ttl, clock_now())
                # Before the grant is recorded: a grant sets the slice to what the service holds for it.
                if team_offered != (0.0, 0) and tb is not None:
                    got = lease.get("team") if isinstance(lease, dict) and res.get("limited") else None
                    got = got if isinstance(got, dict) else None
                    spared(tb, n.team_model, team_offered, got, self.settings.ttl, clock_now())
                team_ok = True
                if tb is not None and team_ask is not None:
                    # Given back through this member's lease from now on: its answer told what its holder holds of
                    # the user's own.
                    tb.via = b.user_id
                    answer = lease.get("team") if isinstance(lease, dict) and res.get("limited") else None
                    ttl = float(lease["ttl_ms"]) / 1000 if isinstance(lease, dict) else self.settings.ttl
                    rtt = max(0.0, clock_now() - sent_at)
                    team_ok = self._team_granted(
                        e.team,
                        tb,
                        answer,
                        (team_ask, team_tok),
                        team_windows or [],
                        sent_at,
                        ttl,
                        rtt,
                        renewed,
                        team_under,
                    )
                if not isinstance(res, dict) or not res.get("limited") or not lease:
                    b.unlimited_until = clock_now() + UNLIMITED_FOR
                    return True
                period_end = parse_time(lease["period_end"])
                if b.lease_id is None or period_end != b.period_end:
                    # A new period: the lease starts from what the service holds for it.
                    b.spend.granted = b.spend.used = 0.0
                    b.spend.answered = False
                    b.tokens.clear()
                b.lease_id = lease["lease_id"]
                b.period_end = period_end
                lt = lease.get("tokens")
                adopted(b, b.spend, float(lease["granted"]), float(lease["added"]))
                if n.model is not None and isinstance(lt, dict):
                    adopted(b, b.slice(n.model), float(lt["granted"]), float(lt["added"]))
                added_tokens = float(lt["added"]) if lt else 0.0
                ttl = float(lease["ttl_ms"]) / 1000
                windows_ok, windows_full = windows_granted(
                    b, windows, lease.get("windows") or [], sent_at, ttl, epoch, renewed
                )
                members_ok, members_full = windows_granted(
                    b, members, lease.get("member_windows") or [], sent_at, ttl, epoch, renewed
                )
                windows_ok = windows_ok and members_ok
                windows_full = windows_full and members_full
                ok = (
                    team_ok
                    and (not spend[2] or not lease.get("spend_limited") or lease["added"] > 0)
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
                    b.lost_at = 0.0
                elif sent_at < b.deadline and b.lost_at == 0:
                    # Nothing more, but the service keeps a live lease for another lifetime when asked again for no
                    # need.
                    if renewed:
                        b.deadline = sent_at + ttl
                    # Asked under the caps in force after a change that came while the last grant was on its way:
                    # with something left under them, the service counted what this holder holds within them, so
                    # the slice is valid under them, as a grant would have proved it. Else a call whose need was
                    # refused only because the slice already holds it would be refused.
                    if epoch == b.epoch and renewing(b) and _room_left(lease, n.model):
                        self._granted(b, epoch, caps, n.model)
                elif b.lost_at > 0 and clock_now() < b.lost_at + ttl and self._holds_more(b, lease, n.model):
                    # Nothing added, but the lease holds more than this process knew: a request whose answer was
                    # lost was granted. The service keeps it until at least that request's time plus the lifetime;
                    # left unused, it would be lost to every replica until it lapsed.
                    if b.lost_at >= b.deadline:
                        for t in b.tokens.values():
                            t.granted = min(t.granted, t.used)
                    b.spend.granted = max(b.spend.granted, float(lease["granted"]))
                    if n.model is not None and lt is not None:
                        b.slice(n.model).granted = max(b.slice(n.model).granted, float(lt["granted"]))
                    self._granted(b, epoch, caps, n.model)
                    b.deadline = max(b.deadline, b.lost_at + ttl)
                    b.lost_at = 0.0
        except MeterError as err:
            if isinstance(err, MeterAPIError) and not err.retryable:
                # An older service refuses a field it does not know by name (422).
                offer_refused = err.status == 422 and re.search(r"\bspare", err.detail) is not None
                if offered != (0.0, 0):
                    # Refused whole: nothing offered was taken back. A service that takes nothing back: nothing is
                    # offered for a minute.
                    with self.lock:
                        spared(b, n.model, offered, None, self.settings.ttl, clock_now())
                        if offer_refused:
                            b.spare_at = clock_now() + UNLIMITED_FOR
                if team_offered != (0.0, 0) and tb is not None:
                    with self.lock:
                        spared(tb, n.team_model, team_offered, None, self.settings.ttl, clock_now())
                        if offer_refused:
                            tb.spare_at = clock_now() + UNLIMITED_FOR
                if err.status == 422 and not offer_refused and (windows or members):
                    # A service that does not lease windows yet refuses the field: windows are then kept per
                    # process, as without leases, and asked for again in a minute.
                    with self.lock:
                        for a in windows + members:
                            a.slice.unlimited_until = clock_now() + UNLIMITED_FOR
                    ok = True
                self.warn(f"lease request for {b.user_id} refused", err)
            else:
                with self.lock:
                    # Whether the service granted something is unknown: a later answer tells (adopted above).
                    if b.lost_at == 0:
                        b.lost_at = sent_at
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

    def _team_granted(
        self,
        team: TeamEntry | None,
        tb: TeamBook,
        t: Any,
        asks: tuple[tuple[float, float, bool], tuple[float, float, bool] | None],
        windows: list[WindowAsk],
        sent_at: float,
        ttl: float,
        rtt: float,
        renewed: bool,
        under: tuple[int, tuple[float | None, float | None]],
    ) -> bool:
        """Records the service's answer for the team's slices: a grant sets a slice to what the service holds for this
        holder and extends its lifetime; a refusal holds further asks back for a moment; no team slice (nothing
        capped, or the user left the team) stops asking for a minute. False when a slice was short and got nothing.
        ``under``: the changes seen when it was sent, and the team plan's caps then (dollars, the model's tokens)."""
        round_trip(tb, rtt)
        now = clock_now()
        ask, tok = asks
        answers = (t.get("windows") or []) if isinstance(t, dict) else []
        tokens = t.get("tokens") if isinstance(t, dict) else None
        if not isinstance(tokens, dict):
            tokens = None
        if not isinstance(t, dict) or not (
            t.get("spend_limited")
            or tokens is not None
            or any(w.get("limited") for w in answers if isinstance(w, dict))
        ):
            # Nothing of the team is capped (or the user left it): unless the plan caps tokens of models not asked yet.
            if not isinstance(t, dict) or team is None or team.config is None or not team.config.model_limits:
                tb.unlimited_until = now + UNLIMITED_FOR
            return True
        period_end = parse_time(t["period_end"])
        if period_end != tb.period_end:
            # A new period: the slices start from what the service holds for it. What this process used of the
            # last one counts there, not here: kept, it held the new period's first grants.
            tb.spend.granted = tb.spend.used = 0.0
            tb.spend.answered = False
            tb.tokens.clear()
            tb.period_end = period_end
        epoch, caps = under
        adopted(tb, tb.spend, float(t.get("granted") or 0), float(t.get("added") or 0))
        if tokens is not None:
            adopted(
                tb, tb.slice(str(tokens["model"])), float(tokens.get("granted") or 0), float(tokens.get("added") or 0)
            )
        windows_ok, windows_full = windows_granted(tb, windows, answers, sent_at, ttl, epoch, renewed)
        if any(isinstance(w, dict) and float(w.get("added") or 0) > 0 for w in answers):
            tb.leased = True
        spend = bool(t.get("spend_limited")) and ask[1] > 0
        added = float(t.get("added") or 0) if spend else 0.0
        tokens_added = float(tokens.get("added") or 0) if tokens is not None and tok is not None else 0.0
        # The model whose team token slice was asked for and answered.
        model = None if tokens is None or tok is None else str(tokens["model"])
        if added > 0 or tokens_added > 0:
            # The counter's lease as written: a lapsed one restarted in every budget.
            if sent_at >= tb.deadline:
                for s in tb.tokens.values():
                    s.granted = min(s.granted, s.used)
            if added > 0:
                tb.spend.granted = float(t["granted"])
            if tokens is not None and tok is not None:
                tb.slice(str(tokens["model"])).granted = float(tokens.get("granted") or 0)
            self._granted(tb, epoch, caps, model)
            tb.deadline = sent_at + ttl
            tb.retry_at = 0.0
            tb.leased = True
        else:
            # A live team lease asked again for no need is kept for another lifetime.
            if renewed and (ask[1] > 0 or (tok is not None and tok[1] > 0)) and sent_at < tb.deadline:
                tb.deadline = sent_at + ttl
            # Refused under the team plan in force with something left of its caps: what every holder holds is
            # within them (as for a user's lease).
            if epoch == tb.epoch and renewing(tb) and _room_left(t, model):
                self._granted(tb, epoch, caps, model)
            if spend and (float(t.get("remaining") or 0) <= 0 or balance(tb, tb.spend, now) <= 0):
                tb.retry_at = now + OPEN_RETRY
        full = windows_full and (not spend or added >= ask[1] - 1e-9)
        if tok is not None:
            full = full and tokens_added >= math.ceil(tok[1])
        tb.full = full
        spend_ok = not spend or added > 0 or not ask[2]
        tokens_ok = tok is None or tokens_added > 0 or not tok[2]
        return spend_ok and tokens_ok and windows_ok

    @staticmethod
    def _holds_more(b: Book, lease: dict[str, Any], model: str | None) -> bool:
        """The service's lease holds more dollars, or more tokens of ``model``, than this process knew of."""
        lt = lease.get("tokens")
        more_tokens = model is not None and isinstance(lt, dict) and float(lt["granted"]) > b.slice(model).granted
        return float(lease["granted"]) > b.spend.granted or more_tokens

    def _team_book(self, t: TeamEntry, holder: str) -> TeamBook:
        key = team_key(holder, t.team_id)
        tb = self.teams.get(key)
        if tb is None:
            tb = self.teams[key] = TeamBook(t.team_id, t, holder == self.holder)
            # A user who joined a team while its book had a holder id of its own: the team's slices of that holder
            # are this book's alone, and go with it.
            if holder != self.holder:
                self.teams_of.setdefault(holder, set()).add(key)
        tb.entry = t
        return tb

    def _granted(
        self, b: Book | TeamBook, epoch: int, caps: tuple[float | None, float | None], model: str | None
    ) -> None:
        """Records a grant, of a user's slices or a team's: the caps it was asked under (unknown when a plan change
        came while it was on its way). A grant asked under the new plan proves the dollars and the model's tokens it
        names within the new caps (the service counted what this holder holds); other models' token slices are not,
        so they are kept only as far as used, and asked for again."""
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

    def _estimates(self, b: Book, n: LeaseNeed) -> None:
        """The largest estimate seen of each budget (the unit of what is asked for)."""
        estimated(b.spend, n.cost)
        if n.team is not None:
            tb = self._team_book(n.team, b.holder)
            estimated(tb.spend, n.team_cost)
            if n.team_model is not None:
                estimated(tb.slice(n.team_model), n.team_tokens)
            for w in n.team_windows:
                estimated(tb.window(w), w.amount)
        if n.model is not None:
            estimated(b.slice(n.model), n.tokens)
        for w in n.windows:
            estimated(b.window(w), w.amount)
        for w in n.member_windows:
            estimated(b.member_window(w), w.amount)

    def _book(self, e: UserEntry) -> Book:
        b = self.books.get(e.user_id)
        if b is None:
            # A member's book shares the team's slices under this process's holder id, so a book made again after
            # its user's was forgotten (Leases._forgettable) names the holder its last one did: what that one held is
            # counted as used (adopted()). Any other has a holder id of its own, which nothing was granted before.
            shared = leased_team(e) is not None
            if shared:
                holder = self.holder
            else:
                self.made += 1
                holder = f"{self.holder}-{self.made:x}"
            b = self.books[e.user_id] = Book(e.user_id, e, holder, shared)
        b.entry = e
        return b

    def _holder_of(self, user_id: str) -> str:
        """The holder id of the user's book; this process's when it has none (the one a member's book gets)."""
        b = self.books.get(user_id)
        return self.holder if b is None else b.holder


def _room_left(lease: dict[str, Any], model: str | None) -> bool:
    """The answer left something of each cap it counted (the spend cap, the model's token cap): what every holder
    holds, this one's slice with it, is within that cap (what remains is never told below 0)."""
    lt = lease.get("tokens")
    spend = not lease.get("spend_limited") or float(lease.get("remaining") or 0) > 0
    return spend and (model is None or not isinstance(lt, dict) or float(lt.get("remaining") or 0) > 0)


def asks_need(body: dict[str, Any]) -> bool:
    """Whether a lease request asks a need anywhere (its spend, tokens, windows, the team's): the service renews a
    live lease that grants nothing only for a request that asks none (a call's refused need renews nothing), so
    only then is a slice kept here for another lifetime; kept otherwise, it would be spent past the service's end
    while other replicas are granted the same money."""

    def needs(part: Any) -> bool:
        if not isinstance(part, dict):
            return False
        if float(part.get("need") or 0) > 0 or float(part.get("need_tokens") or 0) > 0:
            return True
        windows = [*(part.get("windows") or []), *(part.get("member_windows") or [])]
        return any(float(w.get("need") or 0) > 0 for w in windows)

    return needs(body) or needs(body.get("team"))
