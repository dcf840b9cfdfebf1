"""Budget leases covering a team's cap: replicas serving different members of one team spend slices of the team's
period spend cap granted from the team's own counter, so together they never pass it. The TypeScript client's
sdk/typescript/test/team-leases.test.ts (which runs replica processes)."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

from meterline import LimitExceededError, Meter

from .support import Product, create_team, eventually, near

TEAM_CAP = 10.0
RATES = {"m": {"input": 0, "output": 10}}
# The members' own plans cap nothing: only the team's cap can stop them. Each call's estimate is $1.00.
MEMBER_PLAN = {
    "max_spend_per_period": None,
    "pre_call_estimate": True,
    "pre_call_buffer_tokens": 100,
    "cost_rates": RATES,
}


def _replicas_until_refused(product: Product, team_plan: dict[str, Any]) -> tuple[float, set[str]]:
    """3 replicas with leases serving 9 members of a team on ``team_plan``, 150 calls: what the team counted (every
    call, once) and the reasons the refused calls named."""
    members = [product.create_user(MEMBER_PLAN) for _ in range(9)]
    team_id = create_team(product, team_plan, members)
    replicas = [Meter(api_key=product.key, base_url=product.url, leases=True) for _ in range(3)]
    lock = threading.Lock()
    spent: list[float] = []
    reasons: set[str] = set()

    def call(i: int) -> None:
        m = replicas[i % len(replicas)]
        try:
            with m.reserve(members[i % len(members)], model="m", input_tokens=0) as r:
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
    assert all((m.stats.lease_requests or 0) > 0 for m in replicas)

    def team_spend() -> float | None:
        total = float(product.api.get(f"/teams/{team_id}/usage").json()["total_cost"])
        return total if near(total, sum(spent)) else None

    return eventually(team_spend, what="the team's usage to count every call"), reasons


def test_replicas_serving_different_members_never_pass_the_team_cap(product: Product) -> None:
    total, reasons = _replicas_until_refused(product, {"max_spend_per_period": TEAM_CAP, "cost_rates": RATES})
    assert total <= TEAM_CAP + 1e-9, f"overshoot ${total - TEAM_CAP:.2f}"
    assert reasons == {"team:total_spend"}


def test_replicas_serving_different_members_never_pass_a_team_scope_daily_window(product: Product) -> None:
    # A time zone where it is about noon now: the day's window does not end during the test.
    offset = (12 - datetime.now(timezone.utc).hour + 36) % 24 - 12
    zone = "Etc/GMT" if offset == 0 else f"Etc/GMT-{offset}" if offset > 0 else f"Etc/GMT+{-offset}"
    limits = [{"name": "team-daily", "metric": "spend", "max": TEAM_CAP, "window": "day", "scope": "team"}]
    plan = {"max_spend_per_period": None, "limits": limits, "time_zone": zone, "cost_rates": RATES}
    total, reasons = _replicas_until_refused(product, plan)
    assert total <= TEAM_CAP + 1e-9, f"over the window by ${total - TEAM_CAP:.2f}"
    assert total >= TEAM_CAP - 2, f"the window was spent: ${total:.2f}"
    assert reasons == {"team:limit:team-daily"}


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
