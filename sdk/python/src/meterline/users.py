"""The users this process meters: one UserEntry each, loaded from the service's session view
(GET /users/{id}/session), reloaded when due, when the product's change marker names them (the change poll,
GET /config/changes, once per flush interval for the whole client), and forgotten when idle. Loads run in the
background (``_spawn``); a first call waits for its user's view up to startup_timeout."""

from __future__ import annotations

import time

from .clock import now as clock_now
from .errors import MeterAPIError, MeterError
from .flow import Flow, Handle, Health, Request, Wait, running, started
from .recording import Recording
from .session_view import apply_view, roll_locally
from .state import UserEntry
from .transport import address_hint, session_path
from .types import BillingPeriod, SessionStartState

# Longest wait for /health after a session's 404 (it adds to that load's wait); the gateway's own takes up to 2 s
# when a service is slow.
API_CHECK = 2.5

# Retry delay of a session load that failed (capped by refresh_interval).
LOAD_RETRY = 5.0


class Users(Recording):
    def _ready(self, user_id: str) -> UserEntry | None:
        """The user's entry when usable as is (loaded, period not over); schedules a due reload."""
        e = self._users.get(user_id)
        if e is None:
            return None
        now = clock_now()
        if now >= e.period_end_t or (e.team is not None and now >= e.team.period_end_t):
            return None
        if now >= e.refresh_at and not running(e.refreshing):
            self._refresh(e, None)
        return e

    def _begin_load(self, user_id: str) -> tuple[UserEntry, Handle, bool]:
        """(entry, its load, rollover?) shared by concurrent first callers."""
        with self._lock:
            cached = self._users.get(user_id)
            if cached is not None:
                return cached, self._refresh(cached, self.startup_timeout), True
            pending = self._loading.get(user_id)
            if pending is None:
                e = UserEntry(user_id, clock_now())
                pending = (e, self._refresh(e, self.startup_timeout))
                self._loading[user_id] = pending
            return pending[0], pending[1], False

    def _end_load(self, e: UserEntry, rollover: bool) -> UserEntry:
        with self._lock:
            # A period over with no new one from the service (at a rollover, or a first view whose period has
            # ended already): the next one starts here.
            if rollover or e.loaded:
                now = clock_now()
                if now >= e.period_end_t:
                    roll_locally(e, now)
                if e.team is not None and now >= e.team.period_end_t:
                    e.team.roll_over(now)
            if rollover:
                return e
            self._users.setdefault(e.user_id, e)
            self._loading.pop(e.user_id, None)
            return self._users[e.user_id]

    def _refresh(
        self, e: UserEntry, timeout: float | None, force: bool = False, renew_if_changed: bool = False
    ) -> Handle:
        """Reloads the user's view in the background (one request at a time per user); never raises. ``force``
        (a change named the user): a reload that has not started yet reads after the change, so it is the one;
        only one under way may have read before it, and another is queued. ``renew_if_changed`` (a view read again
        only because no marker says what changed, or read once more after a change): the user's lease is asked for
        again once the view read shows other terms (lease_terms), at once when a reload already queued is the one."""
        with self._lock:
            h = e.refreshing
            if h is not None and running(h) and (not force or not started(h)):
                queued = True
            else:
                terms = (lease_terms(e), None if e.team is None else e.team.team_id) if renew_if_changed else None
                e.refreshing = h = self._spawn(self._load_view(e, timeout, self._http.reachable, terms))
                queued = False
        if queued and renew_if_changed and self._leases is not None:
            self._leases.renew(e.user_id, None if e.team is None else e.team.team_id)
        return h

    def _recent_answer(self) -> str | None:
        """What answers at base_url: the API once it did, else the /health answer of the last second, shared by the
        404s of many users' first loads (None: ask again)."""
        if self._http.api_seen:
            return "ok"
        answer = self._api_answer
        return answer[1] if answer is not None and time.monotonic() - answer[0] < 1.0 else None

    def _load_view(
        self, e: UserEntry, timeout: float | None, was_reachable: bool, terms: tuple[object, str | None] | None = None
    ) -> Flow[None]:
        """``terms``: the user's lease_terms before, and its team: the lease is asked for again if the view read
        changes them."""
        started = False
        renew = False
        try:
            try:
                view = yield Request("GET", session_path(e.user_id), None, timeout)
            except MeterError as err:
                # A 404 says "no such user" only when the API answers here: a wrong address (a proxy, another
                # service) answers 404 to every path, and fail_closed must then hold, not open.
                # A /health that does not answer in time says nothing either way: the load failed.
                missing = isinstance(err, MeterAPIError) and err.status == 404
                there = None
                if missing:
                    there = self._recent_answer()
                    if there is None:
                        there = yield Health(min(self.startup_timeout, API_CHECK))
                        self._api_answer = (time.monotonic(), there)
                misaddressed = there == "not_found"
                now = clock_now()
                with self._lock:
                    if there in ("ok", "degraded"):
                        # Not registered (or deleted): permissive defaults; its events are still sent.
                        if e.loaded:
                            forget(e, now)
                        e.unknown = True
                        e.load_failed = False
                        self._price(e)
                        e.refresh_at = now + self.refresh_interval
                        return
                    e.refresh_at = now + min(LOAD_RETRY, self.refresh_interval)
                    refused = isinstance(err, MeterAPIError) and err.status in (401, 403)
                    warn = was_reachable and not e.load_failed and not refused and not misaddressed
                    e.load_failed = True
                    # Said once (an error, as start()'s and a delivery's 404 are), not once per user.
                    say_misaddressed = misaddressed and not self._misaddressed_said
                    self._misaddressed_said = self._misaddressed_said or misaddressed
                if say_misaddressed:
                    base = self._http.base
                    self._misaddressed(
                        MeterAPIError(
                            404,
                            f"GET {base}/users/{{user_id}}/session answered 404 and nothing of the Meter API "
                            f"answers at {base}: {address_hint(base)}; until it answers, "
                            + (
                                "users whose session is not loaded are hard-gated (fail_closed)"
                                if self.fail_closed
                                else "users whose session is not loaded run on permissive defaults"
                            ),
                        )
                    )
                if refused:
                    assert isinstance(err, MeterAPIError)
                    self._key_refused(err)
                if warn:
                    self._warn(
                        f"loading the session of {e.user_id} failed; "
                        + (
                            "its cached view is used"
                            if e.loaded
                            else "calls are hard-gated (fail_closed)"
                            if self.fail_closed
                            else "permissive defaults"
                        )
                        + " until it loads",
                        err,
                    )
                return
            now = clock_now()
            with self._lock:
                if apply_view(e, view, now, self._teams) == "reset":
                    e.recent = None
                renew = terms is not None and lease_terms(e) != terms[0]
                e.load_failed = False
                e.refresh_at = now + self.refresh_interval
                self._price(e)
                news = e.credit_news(now)
                if not e.started:
                    e.started = started = True
            if renew and self._leases is not None:
                assert terms is not None
                self._leases.renew(e.user_id, terms[1])
            self._say_unpriced()
            if started:
                self._fire(
                    self._session_start,
                    SessionStartState(
                        user_id=e.user_id, plan=e.plan, billing_period=BillingPeriod(e.period_start, e.period_end)
                    ),
                )
            self._fire_credits(news)
        except Exception as err:  # a bug must not leave the user loading forever
            self._warn(f"loading the session of {e.user_id} failed", err)

    def _load_held(self, deadline: float) -> Flow[None]:
        """Loads, one after another until ``deadline`` (time.monotonic), the users whose usage still waits for its
        plan to be priced (their first load failed or is still out): shutdown() and the process's exit deliver
        them priced instead of leaving them held. At exit nothing else would load them: shutdown dropped the loads
        the workers had not started, and the event loop is gone."""
        with self._lock:
            waiting = {
                e.user_id: e for e in [*self._users.values(), *(p[0] for p in self._loading.values())] if e.unpriced
            }
        for e in waiting.values():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            # A load under way is waited for, within what is left (one request at a time per user); a load that was
            # dropped before it started (shutdown) is not under way, nor is a task asyncio.run cancelled.
            if e.unpriced and running(e.refreshing):
                assert e.refreshing is not None
                yield Wait(e.refreshing, min(self.request_timeout, left))
                left = deadline - time.monotonic()
            if e.unpriced and left > 0:
                yield from self._load_view(e, min(self.request_timeout, left), self._http.reachable)

    def _stalled(self, user_ids: set[str]) -> None:
        for uid in user_ids:
            e = self._users.get(uid) or (self._loading.get(uid) or (None, None))[0]
            if e is not None and not running(e.refreshing):
                self._refresh(e, None)

    def _changes(self) -> Flow[None]:
        """One flush tick: asks the service what changed since the marker last seen (one request per
        client, whatever the number of users) and reloads only the users a plan update or a
        subscription change concerns, so a change reaches every running client within
        flush_interval. Users named by the previous answer are read once more here: a read that
        raced the change (another replica's short caches) may have been stale."""
        with self._lock:
            if self._polling_changes or time.monotonic() < self._changes_retry_at:
                return
            if not self._users and self._marker is not None:
                return
            again = [e for e in self._users.values() if e.recheck]
            for e in again:
                e.recheck = False
            self._polling_changes = True
            since = self._marker
        # Read once more after a change (the read that followed it may have been stale): the lease is asked for
        # again if this read shows caps the last one did not.
        for e in again:
            self._refresh(e, None, renew_if_changed=True)
        try:
            c = yield Request("GET", "/config/changes" if since is None else f"/config/changes?since={since}")
            with self._lock:
                if self._marker != since or not isinstance(c, dict):
                    return
                # No marker before this answer (start() not called, or it failed): every cached view may
                # predate a change.
                every = since is None or bool(c.get("all"))
                plans = set(c.get("plan_ids") or ())
                users = set(c.get("user_ids") or ())
                # A team's subscription set, or its plan updated: its members read the team again.
                teams = set(c.get("team_ids") or ())
                named = [
                    (
                        e,
                        e.user_id in users
                        or (e.plan_id is not None and e.plan_id in plans)
                        or (e.team is not None and (e.team.team_id in teams or e.team.plan_id in plans)),
                    )
                    for e in self._users.values()
                ]
                changed = [(e, n) for e, n in named if n or every]
                for e, _ in changed:
                    e.recheck = True
                marker = c.get("marker")
                self._marker = marker if isinstance(marker, int) else since
            for e, by_name in changed:
                if by_name and self._leases is not None:
                    self._leases.renew(e.user_id, None if e.team is None else e.team.team_id)
                # Read again only because no marker says what changed (a first poll without start(), a marker the
                # service no longer knows): its lease is asked for again only if its caps did change.
                self._refresh(e, None, force=True, renew_if_changed=not by_name)
        except MeterAPIError as err:
            if err.status in (401, 403):
                self._key_refused(err)
            elif err.status == 404:
                # A service from before the change marker (or a wrong base_url, which deliveries report).
                if self._changes_retry_at == 0:
                    self._warn(
                        "GET /config/changes answered 404; until it answers, plan changes reach this process only "
                        f"by its periodic reloads (refresh_interval {self.refresh_interval:g} s)",
                        err,
                    )
                self._changes_retry_at = time.monotonic() + self.refresh_interval
        except MeterError:
            pass  # network errors and 5xx: the next tick asks again; deliveries report the outage
        finally:
            with self._lock:
                self._polling_changes = False

    def _expire_credits(self) -> None:
        """Grants that expired while their users made no call."""
        wall = clock_now()
        with self._lock:
            news = [
                n
                for e in self._users.values()
                if e.credits is not None and wall >= e.credits.next_expiry
                for n in e.credit_news(wall)
            ]
        self._fire_credits(news)

    def _sweep(self) -> None:
        """Forgets idle users (nothing in flight or queued, sessions over) and their ended sessions."""
        wall = clock_now()
        with self._lock:
            for uid in list(self._users):
                e = self._users[uid]
                e.sessions.prune(wall, e.timeout)
                if not running(e.refreshing) and e.idle(wall):
                    del self._users[uid]
            self._teams.sweep(self._users.values())


def forget(e: UserEntry, now: float) -> None:
    """The user is gone on the service: back to permissive defaults with empty counters."""
    e.service_user_id = None
    e.plan = "none"
    e.config = None
    e.credits = None
    e.loaded = False
    e.period_cost = 0.0
    e.tokens_by_model = {}
    e.cost_by_model = {}
    e.counters = []
    e.naming = None
    e.team = None
    e.member_counters = []
    e.member_plan = None
    e.expired()
    e.models.clear()
    e.recent = None
    e.sessions.clear(now)


def lease_terms(e: UserEntry) -> tuple[object, ...]:
    """What a user's lease is granted under: the plan, its period, and its team's (Leases.renew)."""
    t = e.team
    return (
        e.plan_id,
        e.config,
        e.period_end,
        None if t is None else (t.team_id, t.plan_id, t.config, t.period_end),
    )
