"""The awaitable calls (AsyncMeter's, Meter's a-prefixed ones): they meter as the blocking ones; a first load
does not block the loop."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from meterline import AsyncMeter, LimitExceededError, Meter, SessionStartState

from .support import FaultProxy, Product, near

PRICED = {"cost_rates": {"m": {"input": 1, "output": 1}}}


def awaitable(m: Meter | AsyncMeter) -> Any:
    """The client's awaitable calls under AsyncMeter's names: Meter's a-prefixed ones, or AsyncMeter itself."""
    if isinstance(m, AsyncMeter):
        return m
    names = ("start", "guard", "reserve", "record", "record_manual", "refresh", "flush", "shutdown")
    return SimpleNamespace(**{n: getattr(m, f"a{n}") for n in names})


@pytest.mark.parametrize("kind", [Meter, AsyncMeter])
async def test_the_awaitable_calls_meter_like_the_blocking_ones(
    product: Product, kind: type[Meter | AsyncMeter]
) -> None:
    user = product.create_user(
        {"max_spend_per_period": 2, "pre_call_estimate": True, "pre_call_buffer_tokens": 0, **PRICED}
    )
    m = kind(api_key=product.key, base_url=product.url)
    a = awaitable(m)
    assert (await a.start()).authenticated
    assert (await a.guard(user, model="m")).status == "ok"
    async with a.reserve(user, model="m", input_tokens=500) as r:
        r.commit(input_tokens=500)
    res = await a.reserve(user, model="m", input_tokens=100)
    res.release()
    with pytest.raises(RuntimeError):
        async with a.reserve(user, model="m", input_tokens=100):
            raise RuntimeError("the model call failed")
    ev = await a.record(user, model="m", input_tokens=1000)
    assert near(ev.cost_total, 1.0)
    with pytest.raises(LimitExceededError):
        await a.guard(user, model="m", input_tokens=600)
    assert await a.flush()
    assert near((await asyncio.to_thread(product.usage, user))["total_cost"], 1.5)
    # The same parameters as the blocking call, positional ones too.
    manual = await a.record_manual(user, 0.25)
    assert near(manual.cost, 0.25)
    assert await a.refresh(user)
    state = m.state(user)
    assert state is not None and near(state.period_cost, 1.75)
    assert await a.shutdown()


@pytest.mark.parametrize("kind", [Meter, AsyncMeter])
async def test_a_first_load_leaves_the_event_loop_free(
    product: Product, proxy: FaultProxy, kind: type[Meter | AsyncMeter]
) -> None:
    user = product.create_user({"max_spend_per_period": 1})
    m = kind(api_key=product.key, base_url=proxy.api_url)
    a = awaitable(m)
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    t = asyncio.create_task(ticker())
    # Twenty first calls at once: one session request, and the loop keeps running meanwhile.
    results = await asyncio.gather(*(a.guard(user) for _ in range(20)))
    stop.set()
    await t
    assert all(r.status == "ok" for r in results)
    assert proxy.count(r"GET /users/.*/session") == 1
    assert ticks > 1
    await a.shutdown()


@pytest.mark.parametrize("kind", [Meter, AsyncMeter])
async def test_async_callbacks_run_on_the_loop(product: Product, kind: type[Meter | AsyncMeter]) -> None:
    user = product.create_user({"max_spend_per_period": 0})
    m = kind(api_key=product.key, base_url=product.url)
    a = awaitable(m)
    seen = asyncio.Event()

    async def on_hard(result: object, ctx: object) -> None:
        seen.set()

    m.on_hard_gate(on_hard)
    with pytest.raises(LimitExceededError):
        await a.guard(user)
    await asyncio.wait_for(seen.wait(), 10)
    await a.shutdown()


async def test_an_async_callback_a_meter_fires_from_its_loader_thread_runs_on_the_loop_it_was_registered_on(
    product: Product,
) -> None:
    user = product.create_user({"max_spend_per_period": 1})
    m = Meter(api_key=product.key, base_url=product.url)
    ran = asyncio.Event()
    where: list[tuple[str, asyncio.AbstractEventLoop, threading.Thread]] = []

    async def started(state: SessionStartState) -> None:
        where.append((state.user_id, asyncio.get_running_loop(), threading.current_thread()))
        ran.set()

    m.on_session_start(started)
    # The load runs on a loader thread, which runs no loop, and fires on_session_start there.
    assert (await m.aguard(user)).status == "ok"
    await asyncio.wait_for(ran.wait(), 10)
    assert where == [(user, asyncio.get_running_loop(), threading.current_thread())]
    await m.ashutdown()


def test_an_async_callback_with_no_loop_running_runs_to_its_end_in_the_thread_that_fires_it(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 1})
    m = Meter(api_key=product.key, base_url=product.url)
    ran = threading.Event()
    threads: list[threading.Thread] = []

    async def started(state: SessionStartState) -> None:
        await asyncio.sleep(0)
        threads.append(threading.current_thread())
        ran.set()

    m.on_session_start(started)
    assert m.guard(user).status == "ok"
    assert ran.wait(10), "the async on_session_start ran"
    assert threads[0] is not threading.current_thread()  # a loader thread's own loop ran it
    m.shutdown()
