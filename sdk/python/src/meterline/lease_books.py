"""A budget lease's books (leases.py): the slices this process holds of each budget, what they spent and how
fast, and the round trips of the requests that fill them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .counters import LimitCounter, hard_mark_of, resets_of, used_of
from .money import add_dollars, fixed, gate_mark, js_number, ratio, to_dollars, to_nano
from .periods import iso
from .reservation import NO_WINDOWS, ReservationAmount, WindowNeed
from .teams import member_scoped
from .types import GuardResult, PlanConfig, PlanLimit
from .windows import dimension_key

if TYPE_CHECKING:
    from .flow import Handle
    from .state import UserEntry
    from .teams import TeamEntry

# The shortest round trip planned for (s): a request that takes this long, when requests usually
# answer in milliseconds, still finds the slice covering the calls meanwhile.
_MIN_HORIZON = 1.0
# Time constant of the spend-rate average (s), and the shortest window a young rate is taken over.
RATE_TAU = 2.0
RATE_MIN_WINDOW = 0.1


@dataclass(frozen=True, slots=True)
class LeaseSettings:
    ttl: float
    calls: int
    idle: float
    fallback: str


# What the lease request a call waits for asks (Leases.asking): for this call ("own"); for what the user's slices
# lacked before the call came ("earlier"); for the team's slices, with another member's request ("team").
Asked = Literal["own", "earlier", "team"]


@dataclass(frozen=True, slots=True)
class LeaseNeed:
    cost: float
    model: str | None
    tokens: float
    # The lease must hold all of it (a pre-call estimate); else (a typical call, the default) the call is
    # covered while the lease holds anything, and takes its amount from it all the same.
    whole: bool
    # The windows of the plan's limits the call counts in (each must cover it).
    windows: tuple[WindowNeed, ...] = NO_WINDOWS
    # The user's own period spend cap is leased (its slice must cover ``cost``).
    spend: bool = True
    # The member's team whose period spend cap or team-scope windows are leased, else None.
    team: TeamEntry | None = None
    team_cost: float = 0.0
    # The team's period spend cap is leased: its slice must cover ``team_cost``.
    team_spend: bool = False
    # The windows of the team plan's team-scope limits the call counts in (each slice must cover it).
    team_windows: tuple[WindowNeed, ...] = NO_WINDOWS
    # The windows of the team plan's member-scope limits (the member's own) the call counts in.
    member_windows: tuple[WindowNeed, ...] = NO_WINDOWS
    # The model whose tokens the team plan caps (its slice must cover ``team_tokens``), else None.
    team_model: str | None = None
    team_tokens: float = 0.0


class Slice:
    __slots__ = ("answered", "cap", "decayed", "estimate", "first_at", "granted", "largest", "last_at", "model", "used")

    def __init__(self, model: str | None = None) -> None:
        # The model whose tokens this is, or None for dollars.
        self.model = model
        # The cap (times hard_gate_at) of the plan the client knew when the request that granted it was sent.
        self.cap = math.inf
        self.granted = 0.0
        self.used = 0.0
        # An answer told what the holder holds of it (adopted(): what a shared holder held before counts as used).
        self.answered = False
        # Largest call estimate seen, and largest amount one finished call took (its real usage, spend()).
        self.estimate = 0.0
        self.largest = 0.0
        # Estimates taken, decayed with RATE_TAU; when the first and the last were taken.
        self.decayed = 0.0
        self.first_at = 0.0
        self.last_at = 0.0

    @property
    def unit(self) -> float:
        """The unit of what is asked for: the largest call estimate seen, else the largest amount a finished call
        took (calls estimated at 0: a plan without cost rates, whose calls' cost is known only once they ran); 0
        while neither is known (the first slice is then a share of the cap, lease_sizing.asked)."""
        return self.estimate if self.estimate > 0 else self.largest

    def finished(self, amount: float) -> None:
        """A finished call took ``amount`` from the slice (added to ``used`` by the caller)."""
        if amount > self.largest:
            self.largest = amount

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
        window = max(RATE_MIN_WINDOW, now - self.first_at)
        decayed = self.decayed * math.exp(-max(0.0, now - self.last_at) / RATE_TAU)
        return decayed / (RATE_TAU * (1 - math.exp(-window / RATE_TAU)))


class WindowSlice(Slice):
    """A slice of one window of a plan limit (amounts in the limit's unit: nano-dollars, tokens, requests)."""

    __slots__ = ("deadline", "dimension", "end", "key", "left_at_service", "retry_at", "start", "unlimited_until")

    def __init__(self, w: WindowNeed) -> None:
        super().__init__(None)
        self.key = w.key
        self.dimension = w.dimension
        self.start = w.start
        self.end = w.end
        # Spent only until then: the time the request that last added to it was sent plus the lifetime.
        self.deadline = 0.0
        # No request asks for this window before then (the service had nothing left of it).
        self.retry_at = 0.0
        # What the service had left of the window for others when it last refused more (the slice's unit): a
        # smaller call may still ask.
        self.left_at_service = math.inf
        # Until then the service said the plan has no limit of this dimension.
        self.unlimited_until = 0.0

    @property
    def money(self) -> bool:
        return self.dimension.startswith("spend:")

    def wire(self, x: float) -> float:
        """An amount of the slice as the service takes it: whole units, dollars for spend."""
        n = math.ceil(x)
        return to_dollars(n) if self.money else n

    def unit_of(self, x: float) -> float:
        """An amount the service answered in the slice's unit."""
        return to_nano(x) if self.money else float(x)


class Sizing:
    """What sizes a lease's requests (lease_sizing.py): the calls holding on it and the round trips of its
    requests. Shared by a user's Book and a TeamBook."""

    def __init__(self) -> None:
        self.spend = Slice()
        # Spent only until then: the time the request that last added to it was sent plus the lifetime.
        self.deadline = 0.0
        self.period_end = 0.0
        self.unlimited_until = 0.0
        self.last_use = 0.0
        # Round trips of lease requests (s): smoothed, their mean deviation, a peak that fades.
        self.srtt = 0.0
        self.rttvar = 0.0
        self.peak_rtt = 0.0
        self.rtts = 0
        # False once the service granted less than asked (its share near the cap).
        self.full = True
        self.boost = 1.0
        self.holds = 0
        self.joined = 0
        # No request offers what the slices hold beyond their needs (spare) before then, and the pause after an offer
        # the service took nothing of (doubled each time, up to the renewal margin): a replica alone, or one whose
        # share nobody needs, is not asked again and again.
        self.spare_at = 0.0
        self.spare_gap = RATE_MIN_WINDOW
        self.asking: Handle | None = None
        # Plan or subscription changes seen, and how many had been seen when the request behind the
        # last grant was sent.
        self.epoch = 0
        self.grant_epoch = 0


class Book(Sizing):
    def __init__(self, user_id: str, entry: UserEntry, holder: str, shared: bool) -> None:
        super().__init__()
        self.user_id = user_id
        # The user's view (replaced when an idle user is loaded again).
        self.entry = entry
        # The holder id its requests and calls' events name (LeaseRequests._book says which).
        self.holder = holder
        # The holder is this process's, which books before this one may have held slices under (adopted()).
        self.shared = shared
        # Calls that may wait for this book's requests, then take from it (Leases.waiting): the book stays for them.
        self.waits = 0
        self.lease_id: str | None = None
        self.tokens: dict[str, Slice] = {}
        # Window slices by key (WindowNeed.key); a calendar window's goes once it ended.
        self.windows: dict[str, WindowSlice] = {}
        # The same for the member-scope windows of the user's team plan (the user's own, capped by the team plan).
        self.member_windows: dict[str, WindowSlice] = {}
        self.open = False
        self.asked_at = 0.0
        # When the first request whose answer never came (since the last grant) was sent, else 0: the service may
        # have granted it, so a later answer showing more than this process knew is adopted, and the lease is given
        # back when idle even though no grant was seen.
        self.lost_at = 0.0
        # Calls waited for a request since the last grant, while a lease was held.
        self.starved = False
        # Epochs (renew()): and the last request's; while the grant's differs from `epoch` the slice may
        # have been granted under caps no longer in force.
        self.asked_epoch = 0

    def slice(self, model: str) -> Slice:
        s = self.tokens.get(model)
        if s is None:
            s = self.tokens[model] = Slice(model)
        return s

    def window(self, w: WindowNeed) -> WindowSlice:
        return window_slice(self.windows, w)

    def member_window(self, w: WindowNeed) -> WindowSlice:
        return window_slice(self.member_windows, w)


def team_key(holder: str, team_id: str) -> str:
    """A team book's key: the holder its slices are granted to, and the team."""
    return f"{holder}|{team_id}"


def window_slice(slices: dict[str, WindowSlice], w: WindowNeed) -> WindowSlice:
    """The slice of a window kept in ``slices``, made on first use."""
    s = slices.get(w.key)
    if s is None:
        s = slices[w.key] = WindowSlice(w)
    return s


def adopted(b: Book | TeamBook, s: Slice, granted: float, added: float) -> None:
    """Records what an answer says the holder holds of a slice in all (``granted``, ``added`` by it) where the holder
    is shared with books before this one (a team member's book made again after its user's was forgotten, a
    team's): at the slice's first answer, what the holder held before the grant was such a book's, given back as what
    it used (or granted under a request whose answer was lost), and counts as used here. Only what is added is spent;
    a release gives back only slices answered so (a release of none would set the holder's slice to what this book
    alone used). Amounts in the slice's unit."""
    if not b.shared or s.answered:
        return
    if s is b.spend:
        s.used = add_dollars(s.used, add_dollars(granted, -added))
    else:
        s.used += granted - added
    s.granted = granted
    s.answered = True


def finished(s: Slice, amount: float) -> None:
    """A finished call's usage taken from the slice."""
    s.used += amount
    s.finished(amount)


def spent_from(book: Book | TeamBook, cost: float, model: str | None, tokens: int) -> None:
    """A finished call's cost taken from a book's spend slice (exact dollars), and its tokens from the model's slice."""
    book.spend.used = add_dollars(book.spend.used, cost)
    book.spend.finished(cost)
    t = None if model is None else book.tokens.get(model)
    if t is not None:
        finished(t, tokens)


def estimated(s: Slice, amount: float) -> None:
    """A call's estimate seen: the largest is the unit of what is asked for."""
    if amount > s.estimate:
        s.estimate = amount


class TeamBook(Sizing):
    """This process's slices of one team's period spend cap and team-scope windows, shared by every member of the
    team it serves (the service keeps one slice per holder beside the team's counts); asked for with a member's
    lease request, one request carrying them at a time (``asking``). Its epochs count the changes of the team plan
    or subscription, and of its members', seen (Leases.renew): after one, its slices are spent while valid under the
    team plan in force and asked for again, as a user's. ``unlimited_until``: the service said the team has nothing
    capped (or the user left it)."""

    def __init__(self, team_id: str, entry: TeamEntry, shared: bool) -> None:
        super().__init__()
        self.team_id = team_id
        # Under this process's holder id, which team books before this one may have held slices under (adopted()).
        self.shared = shared
        # The team's view (its plan, its period), replaced when the team is loaded again.
        self.entry = entry
        # The changes seen when the last request carrying the team's ask was sent.
        self.asked_epoch = 0
        # Window slices by key (WindowNeed.key); a calendar window's goes once it ended.
        self.windows: dict[str, WindowSlice] = {}
        # A slice (spend, tokens or window) was granted once: calls' events name the holder.
        self.leased = False
        # Slices of the team's token caps by normalized model.
        self.tokens: dict[str, Slice] = {}
        # No request asks for the team's slice before then: the service had nothing left of the cap.
        self.retry_at = 0.0
        # The member whose request last carried the ask: the slice is given back through its lease.
        self.via: str | None = None

    def window(self, w: WindowNeed) -> WindowSlice:
        return window_slice(self.windows, w)

    def slice(self, model: str) -> Slice:
        s = self.tokens.get(model)
        if s is None:
            s = self.tokens[model] = Slice(model)
        return s


def has_team_windows(plan: PlanConfig) -> bool:
    return any(not member_scoped(lim) for lim in plan.limits)


def has_member_windows(plan: PlanConfig) -> bool:
    return any(member_scoped(lim) for lim in plan.limits)


def _in_scope(lim: PlanLimit, scope: str) -> bool:
    """Whether a limit is of ``scope``: "all" (a user's own plan), or a team plan's "team" or "member" ones."""
    return scope == "all" or member_scoped(lim) == (scope == "member")


def leased_team(e: UserEntry) -> TeamEntry | None:
    """The member's team when its plan caps the team's period spend or has team-scope windows (the team slices a
    call needs), else None."""
    t = e.team
    if t is None or t.config is None:
        return None
    plan = t.config
    return t if plan.max_spend_per_period is not None or plan.model_limits or has_team_windows(plan) else None


def spend_cap_with_credits(e: UserEntry) -> float | None:
    """The period spend cap (times hard_gate_at) a user's lease grants against: with prepaid credits the allowance
    plus what the period drew plus the balance, as the service counts it; None when uncapped."""
    plan = e.config
    if plan is None or plan.max_spend_per_period is None:
        return None
    top = plan.max_spend_per_period if e.credits is None else e.credits.cap
    return float(top) * plan.hard_gate_at


def team_cap_of(t: TeamEntry) -> float | None:
    """The team's period spend cap (times hard_gate_at); None when the team plan has none."""
    plan = t.config
    assert plan is not None
    return None if plan.max_spend_per_period is None else float(plan.max_spend_per_period) * plan.hard_gate_at


def team_token_cap_of(t: TeamEntry, model: str) -> float | None:
    """The team's token cap of a model (times hard_gate_at); None when the team plan does not cap it."""
    plan = t.config
    assert plan is not None
    top = plan.model_limits.get(model)
    return None if top is None else float(top) * plan.hard_gate_at


def team_token_refusal(t: TeamEntry, model: str, tokens: float) -> GuardResult:
    """A call the team's token slice does not cover: blocked by the team's token cap of its model until the team's
    period ends."""
    cap = team_token_cap_of(t, model)
    assert cap is not None
    current = t.tokens_by_model.get(model, 0) + t.reserved_tokens.get(model, 0)
    return GuardResult(
        "hard_gate",
        f"team:model_limit:{model}",
        max(1.0, ratio(current, cap)) if cap > 0 else 1.0,
        current,
        cap,
        f"team token cap of {js_number(cap)} for {model} reached: no budget lease covers this call "
        f"({js_number(tokens)} tokens) across "
        "replicas",
        iso(t.period_end_t),
    )


def team_refusal(t: TeamEntry, cost: float) -> GuardResult:
    """A call the team's slice does not cover: blocked by the team's cap until the team's period ends."""
    plan = t.config
    assert plan is not None and plan.max_spend_per_period is not None
    cap = gate_mark(plan.max_spend_per_period, plan.hard_gate_at)
    current = add_dollars(t.period_cost, t.reserved_cost)
    return GuardResult(
        "hard_gate",
        "team:total_spend",
        max(1.0, ratio(current, cap)) if cap > 0 else 1.0,
        current,
        cap,
        f"team period spend cap of ${fixed(cap, 2)} reached: no budget lease covers this call "
        f"(estimate ${fixed(cost, 4)}) across replicas",
        None if plan.prepaid else iso(t.period_end_t),
    )


def horizon(b: Book | TeamBook) -> float:
    """A round trip to plan for: the smoothed one plus two deviations, a recent peak when
    longer, at least _MIN_HORIZON."""
    return max(b.srtt + 2 * b.rttvar, b.peak_rtt, _MIN_HORIZON)


def round_trip(b: Book | TeamBook, rtt: float) -> None:
    if b.rtts == 0:
        b.srtt, b.rttvar = rtt, rtt / 2
    else:
        b.rttvar = 0.75 * b.rttvar + 0.25 * abs(b.srtt - rtt)
        b.srtt = 0.875 * b.srtt + 0.125 * rtt
    b.rtts += 1
    b.peak_rtt = max(rtt, 0.8 * b.peak_rtt)


def renewing(b: Book | TeamBook) -> bool:
    """A plan or subscription change came after the request behind the last grant was sent."""
    return b.grant_epoch != b.epoch


def valid(b: Book | TeamBook, s: Slice) -> bool:
    """The slice, granted under the caps of ``s.cap``, is within the caps in force now, in the lease's period."""
    if isinstance(b, TeamBook):
        return _team_valid(b, s)
    if isinstance(s, WindowSlice):
        # A member-scope window is capped by the team plan, not the member's own.
        member = any(x is s for x in b.member_windows.values())
        top = (member_window_cap_of if member else window_cap_of)(b.entry, s.dimension)
        return top is not None and top >= s.cap
    if abs(b.entry.period_end_t - b.period_end) > 1e-3:
        return False
    cap = cap_of(b.entry, s.model)
    return cap is None or cap >= s.cap


def _team_valid(tb: TeamBook, s: Slice) -> bool:
    """valid() of a team slice, against the team plan in force."""
    t = tb.entry
    if t.config is None:
        # No team plan in force: the member's calls need none of the team's slices.
        return True
    if isinstance(s, WindowSlice):
        top = team_window_cap_of(t, s.dimension)
        return top is not None and top >= s.cap
    if abs(t.period_end_t - tb.period_end) > 1e-3:
        return False
    cap = team_cap_of(t) if s is tb.spend else team_token_cap_of(t, str(s.model))
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
    """A lease that does not cover a call: a hard gate of the period's caps, lifted at the period's end (never by
    itself when the period spend cap is prepaid credits with no allowance: a grant lifts it)."""
    pct = max(1.0, ratio(current, cap)) if cap > 0 else 1.0
    never = reason == "total_spend" and e.config is not None and e.config.prepaid
    return GuardResult("hard_gate", reason, pct, current, cap, message, None if never else iso(e.period_end_t))


_dimensions: dict[int, tuple[PlanConfig, tuple[str, ...]]] = {}


def dimensions_of(plan: PlanConfig) -> tuple[str, ...]:
    """The dimension key of each of the plan's limits, computed once per plan (plans are replaced whole)."""
    hit = _dimensions.get(id(plan))
    if hit is not None and hit[0] is plan:
        return hit[1]
    if len(_dimensions) >= 1000:
        _dimensions.clear()
    keys = tuple(dimension_key(lim.metric, lim.window, lim.duration_minutes, lim.model) for lim in plan.limits)
    _dimensions[id(plan)] = (plan, keys)
    return keys


def window_needs(e: UserEntry, model: str | None, reserved: ReservationAmount, now: float) -> tuple[WindowNeed, ...]:
    """The windows of the plan's limits a call of ``model`` counts in at ``now``, one per dimension (two
    limits of one dimension share a slice)."""
    plan = e.config
    if plan is None or not plan.limits:
        return NO_WINDOWS
    e.advance_windows(now)
    return _needs_of(plan, e.counters, model, reserved, "all")


def team_window_needs(
    t: TeamEntry, model: str | None, reserved: ReservationAmount, now: float
) -> tuple[WindowNeed, ...]:
    """The same for the team plan's team-scope windows (a member's call counts in the team's)."""
    plan = t.config
    if plan is None or not has_team_windows(plan):
        return NO_WINDOWS
    t.advance_windows(now)
    return _needs_of(plan, t.counters, model, reserved, "team")


def member_window_needs(
    e: UserEntry, model: str | None, reserved: ReservationAmount, now: float
) -> tuple[WindowNeed, ...]:
    """The same for the member-scope windows of the user's team plan (the user's own, by its member counters)."""
    plan = None if e.team is None else e.team.config
    if plan is None or not has_member_windows(plan):
        return NO_WINDOWS
    e.advance_team(now)
    return _needs_of(plan, e.member_counters, model, reserved, "member")


def _needs_of(
    plan: PlanConfig, counters: list[LimitCounter], model: str | None, reserved: ReservationAmount, scope: str
) -> tuple[WindowNeed, ...]:
    dims = dimensions_of(plan)
    out: list[WindowNeed] = []
    for i, lim in enumerate(plan.limits):
        if i >= len(counters):
            break
        if lim.model is not None and lim.model != model:
            continue
        if not _in_scope(lim, scope):
            continue
        c = counters[i]
        dim = dims[i]
        rolling = lim.window == "rolling"
        key = f"{dim}|r" if rolling else f"{dim}|{c.start!r}"
        if any(w.key == key for w in out):
            continue
        metric = lim.metric
        amount = float(to_nano(reserved.cost)) if metric == "spend" else reserved.tokens if metric == "tokens" else 1.0
        out.append(
            WindowNeed(
                key,
                dim,
                None if rolling else c.start,
                math.inf if rolling else c.end,
                amount,
                i,
                metric == "requests" or reserved.exact,
            )
        )
    return tuple(out)


def window_cap_of(e: UserEntry, dimension: str) -> float | None:
    """The strictest hard mark (in the limit's unit) of the plan in force's limits of a dimension; None when
    it has none."""
    return None if e.config is None else _cap_of_dimension(e.config, dimension, "all")


def team_window_cap_of(t: TeamEntry, dimension: str) -> float | None:
    """The same among the team plan's team-scope limits."""
    return None if t.config is None else _cap_of_dimension(t.config, dimension, "team")


def member_window_cap_of(e: UserEntry, dimension: str) -> float | None:
    """The same among the member-scope limits of the user's team plan."""
    plan = None if e.team is None else e.team.config
    return None if plan is None else _cap_of_dimension(plan, dimension, "member")


def _cap_of_dimension(plan: PlanConfig, dimension: str, scope: str) -> float | None:
    top: float | None = None
    for lim, dim in zip(plan.limits, dimensions_of(plan), strict=True):
        if dim != dimension or not _in_scope(lim, scope):
            continue
        mark = hard_mark_of(lim, plan.hard_gate_at)
        top = mark if top is None else min(top, mark)
    return top


def window_refusal(plan: PlanConfig, counters: list[LimitCounter], w: WindowNeed, prefix: str = "") -> GuardResult:
    """A call a window's slice does not cover: blocked by that limit of ``plan`` (its reason ``prefix`` +
    ``limit:<name>``, ``team:`` for a team's) until its window lets calls through again."""
    lim = plan.limits[w.limit]
    c = counters[w.limit]
    money = lim.metric == "spend"
    mark = hard_mark_of(lim, plan.hard_gate_at)
    used = used_of(lim, c) + c.held
    current = to_dollars(int(used)) if money else used
    top = to_dollars(int(mark)) if money else mark
    resets = resets_of(lim, c)
    unit = "dollars" if money else lim.metric
    per = f"{lim.duration_minutes or 0} minutes" if lim.window == "rolling" else lim.window
    return GuardResult(
        "hard_gate",
        f"{prefix}limit:{lim.name}",
        max(1.0, ratio(used, mark)) if mark > 0 else 1.0,
        current,
        top,
        f'limit "{lim.name}" ({js_number(top)} {unit} per {per}) reached: '
        "no budget lease covers this call across replicas",
        None if resets is None else iso(resets),
    )
