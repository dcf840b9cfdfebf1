"""The awaitable twins: a guard on a loaded user does no I/O; a first load does not block the loop."""

from __future__ import annotations

import asyncio

import pytest

from meterline import LimitExceededError, Meter

from .support import FaultProxy, Product, near

PRICED = {"cost_rates": {"m": {"input": 1, "output": 1}}}


async def test_async_twins_meter_like_the_blocking_ones(product: Product) -> None:
    user = product.create_user(
        {"max_spend_per_period": 2, "pre_call_estimate": True, "pre_call_buffer_tokens": 0, **PRICED}
    )
    m = Meter(api_key=product.key, base_url=product.url)
    assert (await m.astart()).authenticated
    assert (await m.aguard(user, model="m")).status == "ok"
    async with m.areserve(user, model="m", input_tokens=500) as r:
        r.commit(input_tokens=500)
    res = await m.areserve(user, model="m", input_tokens=100)
    res.release()
    with pytest.raises(RuntimeError):
        async with m.areserve(user, model="m", input_tokens=100):
            raise RuntimeError("the model call failed")
    ev = await m.arecord(user, model="m", input_tokens=1000)
    assert near(ev.cost_total, 1.0)
    with pytest.raises(LimitExceededError):
        await m.aguard(user, model="m", input_tokens=600)
    assert await m.aflush()
    assert near(product.usage(user)["total_cost"], 1.5)
    manual = await m.arecord_manual(user, cost=0.25)
    assert near(manual.cost, 0.25)
    assert await m.ashutdown()


async def test_a_first_load_leaves_the_event_loop_free(product: Product, proxy: FaultProxy) -> None:
    user = product.create_user({"max_spend_per_period": 1})
    m = Meter(api_key=product.key, base_url=proxy.api_url)
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    t = asyncio.create_task(ticker())
    # Twenty first calls at once: one session request, and the loop keeps running meanwhile.
    results = await asyncio.gather(*(m.aguard(user) for _ in range(20)))
    stop.set()
    await t
    assert all(r.status == "ok" for r in results)
    assert proxy.count(r"GET /users/.*/session") == 1
    assert ticks > 1
    await m.ashutdown()


async def test_async_callbacks_run_on_the_loop(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 0})
    m = Meter(api_key=product.key, base_url=product.url)
    seen = asyncio.Event()

    async def on_hard(result: object, ctx: object) -> None:
        seen.set()

    m.on_hard_gate(on_hard)
    with pytest.raises(LimitExceededError):
        await m.aguard(user)
    await asyncio.wait_for(seen.wait(), 10)
    await m.ashutdown()
