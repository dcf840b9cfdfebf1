"""1,000 concurrent calls on one user, across threads and asyncio tasks, with the pre-call estimate:
spend never passes the cap."""

from __future__ import annotations

import asyncio
import random
import threading
from concurrent.futures import ThreadPoolExecutor

from meterline import LimitExceededError, Meter

from .support import Product, near

CAP = 50.0


def test_a_thousand_concurrent_calls_across_threads_and_tasks_never_overshoot(product: Product) -> None:
    # Estimate: 60 output tokens at $10/1K = $0.60; real calls use 10 to 60 tokens ($0.10 to $0.60).
    user = product.create_user(
        {
            "max_spend_per_period": CAP,
            "pre_call_estimate": True,
            "pre_call_buffer_tokens": 60,
            "cost_rates": {"m": {"input": 0, "output": 10}},
        }
    )
    m = Meter(api_key=product.key, base_url=product.url)
    lock = threading.Lock()
    ran: list[float] = []
    blocked = [0]
    start = threading.Barrier(2)

    def outcome(cost: float | None) -> None:
        with lock:
            if cost is None:
                blocked[0] += 1
            else:
                ran.append(cost)

    def one_sync(i: int) -> None:
        try:
            with m.reserve(user, model="m", input_tokens=0) as r:
                outcome(r.commit(output_tokens=random.randint(10, 60)).cost_total)
        except LimitExceededError:
            outcome(None)

    async def one_async() -> None:
        try:
            async with m.areserve(user, model="m", input_tokens=0) as r:
                await asyncio.sleep(0)
                outcome(r.commit(output_tokens=random.randint(10, 60)).cost_total)
        except LimitExceededError:
            outcome(None)

    async def tasks() -> None:
        start.wait()
        await asyncio.gather(*(one_async() for _ in range(500)))

    def threads() -> None:
        start.wait()
        with ThreadPoolExecutor(max_workers=32) as pool:
            list(pool.map(one_sync, range(500)))

    t = threading.Thread(target=lambda: asyncio.run(tasks()))
    t.start()
    threads()
    t.join()
    assert len(ran) + blocked[0] == 1000
    assert blocked[0] > 0 and len(ran) > 0
    assert m.flush(timeout=30)
    total = product.usage(user)["total_cost"]
    assert near(total, sum(ran))
    overshoot = max(0.0, total - CAP)
    assert overshoot == 0.0, f"overshoot ${overshoot:.2f}"
    st = m.state(user)
    assert st is not None and near(st.period_cost, total)
    m.shutdown()
