"""Budget leases covering a team's cap: replicas serving different members of one team spend slices of the team's
period spend cap granted from the team's own counter, so together they never pass it. The TypeScript client's
sdk/typescript/test/team-leases.test.ts (which runs replica processes)."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

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


def test_replicas_serving_different_members_never_pass_the_team_cap(product: Product) -> None:
    members = [product.create_user(MEMBER_PLAN) for _ in range(9)]
    team_id = create_team(product, {"max_spend_per_period": TEAM_CAP, "cost_rates": RATES}, members)
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

    def team_spend() -> float | None:
        total = float(product.api.get(f"/teams/{team_id}/usage").json()["total_cost"])
        return total if near(total, sum(spent)) else None

    total = eventually(team_spend, what="the team's usage to count every call")
    assert total <= TEAM_CAP + 1e-9, f"overshoot ${total - TEAM_CAP:.2f}"
    assert reasons == {"team:total_spend"}
    assert all((m.stats.lease_requests or 0) > 0 for m in replicas)
