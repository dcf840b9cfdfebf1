"""Budget leases covering a team's cap: replicas serving different members of one team spend slices of the team's
period spend cap granted from the team's own counter, so together they never pass it. The TypeScript client's
sdk/typescript/test/team-leases.test.ts (which runs replica processes)."""

from __future__ import annotations

import random
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pytest

from meterline import LimitExceededError, Meter

from .support import FaultProxy, Product, create_team, eventually, near, straddle_a_period

TEAM_CAP = 10.0
RATES = {"m": {"input": 0, "output": 10}}
# The members' own plans cap nothing: only the team's cap can stop them. Each call's estimate is $1.00.
MEMBER_PLAN = {
    "max_spend_per_period": None,
    "pre_call_estimate": True,
    "pre_call_buffer_tokens": 100,
    "cost_rates": RATES,
}


@dataclass
class _Run:
    # What the team counted (every call, once), the reasons the refused calls named, the members.
    total: float
    reasons: set[str]
    members: list[str]
    # Every replica asked for leases.
    leased: bool
    team_id: str


def _replicas_until_refused(product: Product, team_plan: dict[str, Any]) -> _Run:
    """3 replicas with leases serving 9 members of a team on ``team_plan``, 150 calls."""
    members = [product.create_user(MEMBER_PLAN) for _ in range(9)]
    team_id = create_team(product, team_plan, members)
    replicas = [Meter(api_key=product.key, base_url=product.url, leases=True) for _ in range(3)]
    lock = threading.Lock()
    spent: list[float] = []
    reasons: set[str] = set()

    def call(i: int) -> None:
        m = replicas[i % len(replicas)]
        try:
            # Each member is served by every replica in turn.
            with m.reserve(members[(i // len(replicas)) % len(members)], model="m", input_tokens=0) as r:
                ev = r.commit(output_tokens=random.randint(50, 100))
            with lock:
                spent.append(ev.cost_total)
        except LimitExceededError as err:
            with lock:
                reasons.add(str(err.reason))

    with ThreadPoolExecutor(max_workers=12) as pool:
        list(pool.map(call, range(150)))
    for m in replicas:
        assert m.shutdown(timeout=30)
    leased = all((m.stats.lease_requests or 0) > 0 for m in replicas)

    def team_spend() -> float | None:
        total = float(product.api.get(f"/teams/{team_id}/usage").json()["total_cost"])
        return total if near(total, sum(spent)) else None

    return _Run(eventually(team_spend, what="the team's usage to count every call"), reasons, members, leased, team_id)


def test_replicas_serving_different_members_never_pass_the_team_cap(product: Product) -> None:
    run = _replicas_until_refused(product, {"max_spend_per_period": TEAM_CAP, "cost_rates": RATES})
    assert run.total <= TEAM_CAP + 1e-9, f"overshoot ${run.total - TEAM_CAP:.2f}"
    assert run.reasons == {"team:total_spend"}
    assert run.leased


def test_replicas_serving_different_members_never_pass_a_team_scope_daily_window(product: Product) -> None:
    limits = [{"name": "team-daily", "metric": "spend", "max": TEAM_CAP, "window": "day", "scope": "team"}]
    plan = {"max_spend_per_period": None, "limits": limits, "time_zone": _noon_zone(), "cost_rates": RATES}
    run = _replicas_until_refused(product, plan)
    assert run.total <= TEAM_CAP + 1e-9, f"over the window by ${run.total - TEAM_CAP:.2f}"
    # Near the window's end the replicas' slices each hold back a call's estimate ($1.00): most of it is spent.
    assert run.total >= TEAM_CAP / 2, f"the window was spent: ${run.total:.2f}"
    assert run.reasons == {"team:limit:team-daily"}
    assert run.leased


def test_one_process_holds_one_slice_of_a_team_cap_for_its_members_and_gives_the_rest_back(product: Product) -> None:
    a, b = (product.create_user(MEMBER_PLAN) for _ in range(2))
    team_id = create_team(product, {"max_spend_per_period": TEAM_CAP, "cost_rates": RATES}, [a, b])
    m = Meter(api_key=product.key, base_url=product.url, leases=True, lease_idle=600)
    for user in (a, b):
        m.guard(user, model="m")
    m.reserve(a, model="m", input_tokens=0).commit(output_tokens=50)  # $0.50
    # The first member's request brought the team's slice; the second member's call spends from it at once.
    held = m.reserve_now(b, model="m", input_tokens=0)
    assert held is not None, "the second member's call waited for a lease request"
    held.commit(output_tokens=50)
    assert m.shutdown(timeout=30)
    eventually(
        lambda: near(float(product.api.get(f"/teams/{team_id}/usage").json()["total_cost"]), 1.0),
        what="the team's usage",
    )
    # Given back: what is free of the team's cap is the cap less what the two calls spent, nothing held.
    ask = {"holder": "probe", "need": 0, "want": 0, "team": {"need": 0, "want": 100}}
    probe = product.api.post(f"/users/{a}/leases", ask)
    assert probe.status_code == 200, probe.text
    team = probe.json()["lease"]["team"]
    assert near(team["added"] + team["remaining"], TEAM_CAP - 1.0), team


def test_members_first_calls_each_waiting_for_other_members_team_asks_still_ask_themselves(
    product: Product, proxy: FaultProxy
) -> None:
    # Three members' first calls on a team cap whose free part ($3.30 once a probe holds $6.70) covers all three $1.00
    # estimates, while no one grant covers more than one: two calls wait for the first member's team ask, then
    # for whatever team ask is on its way after it, and must still ask themselves after those.
    a, b, c = (product.create_user(MEMBER_PLAN) for _ in range(3))
    create_team(product, {"max_spend_per_period": TEAM_CAP, "cost_rates": RATES}, [a, b, c])
    probe = {"holder": "probe", "need": 0, "want": 0, "ttl_ms": 60_000, "team": {"need": 6.7, "want": 6.7}}
    res = product.api.post(f"/users/{a}/leases", probe)
    assert res.status_code == 200 and near(res.json()["lease"]["team"]["added"], 6.7), res.text
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True, lease_idle=600)
    for user in (a, b, c):
        m.guard(user, model="m")
    # What each call's lease waits were for, in order (observed: the client's own method runs as it is).
    waits: dict[str, list[object]] = {a: [], b: [], c: []}
    leases: Any = m._leases  # observed, not replaced
    asking = leases.asking

    def observed(e: Any, n: Any) -> Any:
        r = asking(e, n)
        if r is not None:
            waits[e.user_id].append(r[1])
        return r

    leases.asking = observed
    reasons: list[str] = []
    done: set[str] = set()

    def call(user: str) -> None:
        try:
            with m.reserve(user, model="m", input_tokens=0) as r:
                r.commit(output_tokens=70)
        except LimitExceededError as err:
            reasons.append(f"{user}: {err.reason}")
        finally:
            done.add(user)

    proxy.hold(_LEASES)
    first = threading.Thread(target=call, args=(b,))
    first.start()
    eventually(lambda: proxy.holding == 1, what="the first member's lease request")
    others = [threading.Thread(target=call, args=(u,)) for u in (a, c)]
    for t in others:
        t.start()
    eventually(lambda: len(waits[a]) == 1 and len(waits[c]) == 1, what="both calls waiting for the team's ask")
    # Its answer covers one call of three (it brings $1.10): the team ask that comes next is held too, until each call
    # left has waited twice.
    proxy.release()
    proxy.hold(_LEASES)

    def second_waits() -> bool:
        assert all(u in done or len(waits[u]) >= 2 for u in (a, b, c)), f"{waits}, {proxy.holding} held, {reasons}"
        return True

    eventually(second_waits, what="each call left waiting a second time")
    proxy.release()
    for t in (first, *others):
        t.join(60)
    assert m.shutdown(timeout=30)
    free = TEAM_CAP - 6.7
    assert reasons == [], f"refused with ${free:.2f} of the team cap free for three $1.00 calls: {reasons} ({waits})"


def test_idle_members_are_forgotten_a_capped_one_too_and_the_team_book_and_a_book_made_again_spends_only_its_grant(
    product: Product,
) -> None:
    a, b = (product.create_user(MEMBER_PLAN) for _ in range(2))
    cap = 5.0
    capped = product.create_user({**MEMBER_PLAN, "max_spend_per_period": cap})
    team_id = create_team(product, {"max_spend_per_period": TEAM_CAP, "cost_rates": RATES}, [a, b, capped])
    # Idle long enough that the counts read right after calls are not raced by the sweep on a busy machine.
    m = Meter(api_key=product.key, base_url=product.url, leases=True, lease_idle=2.0)

    def call(user: str) -> None:
        with m.reserve(user, model="m", input_tokens=0) as r:
            r.commit(output_tokens=50)  # $0.50

    for user in (a, b, capped, capped, capped):
        call(user)
    assert m.stats.leased_users == 3
    assert m.stats.leased_teams == 1
    eventually(lambda: m.stats.leased_users == 0 and m.stats.leased_teams == 0, what="every idle book forgotten")
    # Made again under the same holder: the holder's lease of the capped member's own cap holds what the last book
    # used ($1.50), which the new book must not take for room of its own.
    call(capped)
    assert m.stats.leased_users == 1
    # Another holder takes what is left of the member's cap, in shares until nothing is.
    probed = 0.0
    added = 1.0
    while added > 0:
        r = product.api.post(f"/users/{capped}/leases", {"holder": "probe", "need": 0, "want": cap})
        assert r.status_code == 200, r.text
        added = float(r.json()["lease"]["added"])
        probed = float(r.json()["lease"]["granted"])
    assert probed > 0, "the other holder was granted the rest"
    with pytest.raises(LimitExceededError) as refused:
        while True:
            call(capped)
    assert refused.value.reason == "total_spend"
    assert m.shutdown(timeout=30)

    def capped_spend() -> float | None:
        total = float(product.api.get(f"/users/{capped}/usage").json()["total_cost"])
        return total if total >= 2.0 - 1e-9 else None

    spent = eventually(capped_spend, what="the capped member's usage")
    # What the member spent and what the other holder was granted stay within the cap.
    assert spent + probed <= cap + 1e-9, f"${spent} spent and ${probed} granted to another holder, of a cap of ${cap}"
    eventually(
        lambda: near(float(product.api.get(f"/teams/{team_id}/usage").json()["total_cost"]), spent + 1.0),
        what="the team's usage",
    )


def test_a_member_moved_to_another_team_counts_under_its_cap_and_once_idle_neither_team_book_stays(
    product: Product,
) -> None:
    member = product.create_user(MEMBER_PLAN)
    old = create_team(product, {"max_spend_per_period": TEAM_CAP, "cost_rates": RATES}, [member])
    # $3: 3 calls fit ($1.00 estimated, $0.70 spent each).
    new = create_team(product, {"max_spend_per_period": 3.0, "cost_rates": RATES}, [])
    m = Meter(api_key=product.key, base_url=product.url, leases=True, lease_idle=1.0, lease_ttl=2.0)

    def call() -> None:
        with m.reserve(member, model="m", input_tokens=0) as r:
            r.commit(output_tokens=70)

    call()
    call()
    assert product.api.client.put(f"/users/{member}/team", json={"team_id": new}).status_code == 200
    assert m.refresh(member)
    calls = 0
    with pytest.raises(LimitExceededError) as refused:
        while True:
            call()
            calls += 1
    assert refused.value.reason == "team:total_spend"
    assert calls == 3, f"{calls} calls under the new team's cap"
    assert m.stats.leased_teams == 2
    # The old team's slice goes back through no member's lease (none of its members is served here): its book goes
    # once the slice ended.
    eventually(lambda: m.stats.leased_users == 0 and m.stats.leased_teams == 0, what="every idle book forgotten")
    assert m.shutdown(timeout=30)
    eventually(
        lambda: near(float(product.api.get(f"/teams/{new}/usage").json()["total_cost"]), 2.1),
        what="the new team's usage",
    )
    assert near(float(product.api.get(f"/teams/{old}/usage").json()["total_cost"]), 1.4), "the old team kept its calls"


def _team_in_short_periods(product: Product, member: str, cap: float, end: float) -> str:
    """A team of ``member`` with a cap of ``cap`` a period, in periods of 10 s, the first ending at ``end`` (epoch
    seconds; periods roll on from a subscription's dates): its id."""
    team_id = f"t-period-{uuid.uuid4()}"
    assert product.api.post("/teams", {"external_team_id": team_id, "name": "Acme"}).status_code == 201
    sub = {
        "plan_id": product.create_plan(max_spend_per_period=cap, cost_rates=RATES),
        "period_start": datetime.fromtimestamp(end - 10.0, timezone.utc).isoformat(),
        "period_end": datetime.fromtimestamp(end, timezone.utc).isoformat(),
    }
    assert product.api.post(f"/teams/{team_id}/subscription", sub).status_code == 200
    assert product.api.client.put(f"/users/{member}/team", json={"team_id": team_id}).status_code == 200
    return team_id


def test_in_a_new_team_period_a_members_calls_spend_the_whole_team_cap_again(product: Product) -> None:
    member = product.create_user(MEMBER_PLAN)
    # $5 in periods of 10 s, the first ending 6 s from now.
    end = time.time() + 6.0
    team_id = _team_in_short_periods(product, member, 5.0, end)
    m = Meter(api_key=product.key, base_url=product.url, leases=True)

    def call() -> None:
        # $1.00 estimated, $0.70 spent.
        with m.reserve(member, model="m", input_tokens=0) as r:
            r.commit(output_tokens=70)

    def until_refused() -> int:
        calls = 0
        while True:
            try:
                call()
            except LimitExceededError as err:
                assert err.reason == "team:total_spend"
                return calls
            calls += 1

    for _ in range(3):
        call()
    assert time.time() < end, "the first period's calls ran in it"
    while time.time() < end + 0.2:
        time.sleep(0.05)
    # 6 calls fit in $5 ($0.70 each, the sixth's $1.00 estimate within it), whatever the last period spent.
    calls = until_refused()
    assert m.shutdown(timeout=30)
    assert calls == 6, f"{calls} calls in the new period, where 3 ran in the last"
    eventually(
        lambda: near(float(product.api.get(f"/teams/{team_id}/usage").json()["total_cost"]), 4.2),
        what="the new period to count its 6 calls",
    )


def test_a_call_reserved_in_one_team_period_and_committed_in_the_next_gives_its_estimate_back_to_that_period(
    product: Product, proxy: FaultProxy
) -> None:
    # The new period's team slice is spent no further than granted: the straddling call's estimate was never in it.
    member = product.create_user(MEMBER_PLAN)
    # $10 in periods of 10 s, the first ending 5 s from now.
    cap = 10.0
    end = time.time() + 5.0
    team_id = _team_in_short_periods(product, member, cap, end)
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True)
    m.start()

    def probe() -> dict[str, Any]:
        body = {"holder": "probe", "need": 0, "want": 0, "ttl_ms": 60_000, "team": {"need": 0, "want": cap}}
        team: dict[str, Any] = product.api.post(f"/users/{member}/leases", body).json()["lease"]["team"]
        return team

    calls, refused = straddle_a_period(m, member, end, probe)
    assert refused.reason == "team:total_spend"
    # What the service granted this process of the new period's team cap, before shutdown gives the rest back.
    teams = [a["lease"]["team"] for _, a in proxy.exchanges(_LEASES) if a and (a.get("lease") or {}).get("team")]
    granted = max(t["granted"] for t in teams if datetime.fromisoformat(t["period_end"]).timestamp() > end)
    assert m.shutdown(timeout=30)
    eventually(
        lambda: near(float(product.api.get(f"/teams/{team_id}/usage").json()["total_cost"]), calls * 1.0),
        what="the new period's calls counted",
    )
    assert calls * 1.0 <= granted + 1e-9, (
        f"this process spent ${calls} of the new period's team cap, granted ${granted}"
    )


def _noon_zone() -> str:
    """A time zone where it is about noon now: a day's window does not end during a test."""
    offset = (12 - datetime.now(timezone.utc).hour + 36) % 24 - 12
    return "Etc/GMT" if offset == 0 else f"Etc/GMT-{offset}" if offset > 0 else f"Etc/GMT+{-offset}"


def test_replicas_serving_one_member_never_pass_its_seat_window(product: Product) -> None:
    seat = 2.0
    limits = [{"name": "seat-daily", "metric": "spend", "max": seat, "window": "day", "scope": "member"}]
    plan = {"max_spend_per_period": None, "limits": limits, "time_zone": _noon_zone(), "cost_rates": RATES}
    run = _replicas_until_refused(product, plan)
    seats = [float(product.api.get(f"/users/{m}/usage").json()["total_cost"]) for m in run.members]
    assert max(seats) <= seat + 1e-9, f"a member spent ${max(seats):.2f} of its ${seat:.2f} seat"
    assert run.reasons == {"team:limit:seat-daily"}
    assert run.leased


def test_replicas_serving_different_members_never_pass_a_team_token_cap(product: Product) -> None:
    cap = 2_000
    plan = {"max_spend_per_period": None, "model_limits": {"m": {"max_tokens_per_period": cap}}, "cost_rates": RATES}
    run = _replicas_until_refused(product, plan)
    tokens = int(product.api.get(f"/teams/{run.team_id}/usage").json()["total_tokens"])
    assert tokens <= cap, f"the team used {tokens} tokens of its {cap}"
    assert run.reasons == {"team:model_limit:m"}
    assert run.leased


# Small enough that the first slice asked for (a replica's fast start) is half the team's cap; large enough that half
# of it is many round trips of these calls, even at a loaded machine's.
_OFFER_CAP = 200.0
_LEASES = r"POST /users/.*/leases$"


@dataclass
class _Offer:
    """A team cap of 200 call estimates, in dollars or in tokens of "m"; ``spare`` names the offer's field, ``slice``
    the answer's team slice (None: the spend slice, else its key), ``ask`` another member's replica's request, and
    ``usage`` the team's usage field that counts a call as ``per_call``."""

    cap: float
    plan: dict[str, Any]
    spare: str
    slice: str | None
    ask: dict[str, Any]
    usage: str
    per_call: float


_TOKEN_CAP = 20_000
_OFFERS = {
    "spend": _Offer(
        _OFFER_CAP,
        {"max_spend_per_period": _OFFER_CAP, "cost_rates": RATES},
        "spare",
        None,
        {"need": 1, "want": _OFFER_CAP},
        "total_cost",
        1.0,
    ),
    "tokens": _Offer(
        _TOKEN_CAP,
        {
            "max_spend_per_period": None,
            "model_limits": {"m": {"max_tokens_per_period": _TOKEN_CAP}},
            "cost_rates": RATES,
        },
        "spare_tokens",
        "tokens",
        {"need": 0, "want": 0, "model": "m", "need_tokens": 100, "want_tokens": _TOKEN_CAP},
        "total_tokens",
        100,
    ),
}


@pytest.mark.parametrize("kind", sorted(_OFFERS))
def test_a_replica_that_asked_first_offers_back_what_its_team_slice_holds_beyond_its_share(
    product: Product, proxy: FaultProxy, kind: str
) -> None:
    o = _OFFERS[kind]
    members = [product.create_user(MEMBER_PLAN) for _ in range(2)]
    team_id = create_team(product, o.plan, members)

    def sliced(team: dict[str, Any]) -> dict[str, Any]:
        got: dict[str, Any] = team if o.slice is None else team[o.slice]
        return got

    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True)
    m.reserve(members[0], model="m", input_tokens=0).commit(output_tokens=100)  # $1.00, 100 tokens
    calls = 1
    first, answer = proxy.exchanges(_LEASES)[0]
    assert o.spare not in first["team"], "nothing to offer before a rate is measured"
    assert sliced(answer["lease"]["team"])["added"] > o.cap / 3, answer["lease"]["team"]

    def ask_as_other() -> dict[str, Any]:
        # Another member's replica.
        body = {"holder": "other", "need": 0, "want": 0, "ttl_ms": 60_000, "team": o.ask}
        return sliced(product.api.post(f"/users/{members[1]}/leases", body).json()["lease"]["team"])

    assert ask_as_other()["added"] > 0

    def offers() -> list[tuple[Any, Any]]:
        return [(b, a) for b, a in proxy.exchanges(_LEASES) if ((b.get("team") or {}).get(o.spare) or 0) > 0]

    while not offers() and calls < 50:
        time.sleep(0.1)  # the model call
        m.reserve(members[0], model="m", input_tokens=0).commit(output_tokens=100)
        calls += 1
    eventually(lambda: len(offers()) > 0, what="an offer answered")
    body, answer = offers()[0]
    if o.slice is not None:
        assert body["team"]["model"] == "m" and isinstance(body["team"]["spare_tokens"], int), body
    team = sliced(answer["lease"]["team"])
    assert 0 < team["returned"] <= body["team"][o.spare] + 1e-9, (body, team)
    kept = team["granted"] - team["spent"]
    share = (o.cap - team["spent"]) / 3
    assert kept <= share + 1 or near(team["returned"], body["team"][o.spare]), "kept at most its share"
    assert ask_as_other()["added"] > 0, "what went back is the other replica's to be granted"
    assert m.stats.lease_waits == 1, "no call waited after the first"
    assert m.shutdown(timeout=30)

    def counted() -> bool | None:
        return near(float(product.api.get(f"/teams/{team_id}/usage").json()[o.usage]), calls * o.per_call) or None

    eventually(counted, what="every call counted once for the team")


def test_an_older_service_that_refuses_the_team_offers_field_leaves_the_team_slice_what_it_offered(
    product: Product, proxy: FaultProxy
) -> None:
    member = product.create_user(MEMBER_PLAN)
    team_id = create_team(product, {"max_spend_per_period": _OFFER_CAP, "cost_rates": RATES}, [member])
    m = Meter(api_key=product.key, base_url=proxy.api_url, leases=True)
    calls = 0

    def call() -> None:
        nonlocal calls
        time.sleep(0.1)  # the model call
        m.reserve(member, model="m", input_tokens=0).commit(output_tokens=100)  # $1.00
        calls += 1

    call()
    # The next lease request is the offer (the slice is far from its low-water mark): refused as a service without
    # the field refuses it.
    detail = "body/team/spare must NOT have additional properties"
    proxy.inject(_LEASES, "status", status=422, body={"detail": detail})
    while calls < 50 and proxy.count(_LEASES) < 2:
        call()
    eventually(lambda: len(proxy.sent(_LEASES)) >= 2, what="the offer sent")
    assert ((proxy.sent(_LEASES)[1].get("team") or {}).get("spare") or 0) > 0, proxy.sent(_LEASES)
    # Ten calls a tenth of a second apart: an offer the service took nothing of is made again within 0.2 s.
    for _ in range(10):
        call()
    again = [b for b in proxy.sent(_LEASES)[2:] if ((b.get("team") or {}).get("spare") or 0) > 0]
    assert again == [], "nothing offered again"
    assert m.stats.lease_waits == 1, "the calls spent what the refused request offered"
    assert m.shutdown(timeout=30)

    def counted() -> bool | None:
        return near(float(product.api.get(f"/teams/{team_id}/usage").json()["total_cost"]), calls * 1.0) or None

    eventually(counted, what="every call counted once for the team")


def test_a_members_seat_window_is_leased_on_after_a_plan_reload(product: Product) -> None:
    # A reload (a change poll, refresh()) renews the member's leases under the caps in force: its seat window's
    # slice is checked against the team plan's member-scope cap, which the member's own plan does not have.
    limits = [{"name": "seat-daily", "metric": "spend", "max": 5.0, "window": "day", "scope": "member"}]
    member = product.create_user(MEMBER_PLAN)
    create_team(
        product,
        {"max_spend_per_period": None, "limits": limits, "time_zone": _noon_zone(), "cost_rates": RATES},
        [member],
    )
    m = Meter(api_key=product.key, base_url=product.url, leases=True)
    try:
        for _ in range(2):
            with m.reserve(member, model="m", input_tokens=0) as r:
                r.commit(output_tokens=10)
            assert m.refresh(member)
        assert (m.stats.lease_requests or 0) > 0
    finally:
        assert m.shutdown(timeout=10)
    assert near(float(product.api.get(f"/users/{member}/usage").json()["total_cost"]), 0.2)
