"""AsyncMeter: Meter's semantics over httpx.AsyncClient, every request awaited on the event loop."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading

import pytest
from openai import OpenAI

from meterline import AsyncMeter
from meterline.openai import wrap

from .support import FaultProxy, Product, near

PRICED = {"cost_rates": {"m": {"input": 1, "output": 1}}}


async def test_async_meter_does_its_io_on_the_event_loop_without_threads(product: Product) -> None:
    users = [product.create_user({"max_spend_per_period": 100, **PRICED}) for _ in range(20)]
    before = set(threading.enumerate())
    loop_thread = threading.get_ident()
    loaded_on: list[int] = []
    m = AsyncMeter(api_key=product.key, base_url=product.url, flush_interval=0.1, leases=True)
    m.on_session_start(lambda s: loaded_on.append(threading.get_ident()))
    started: set[threading.Thread] = set()
    stop = asyncio.Event()

    async def watch() -> None:
        # Threads of earlier tests may end meanwhile: what counts is that none begins.
        while not stop.is_set():
            started.update(set(threading.enumerate()) - before)
            await asyncio.sleep(0)

    async def calls(user: str) -> None:
        async with m.reserve(user, model="m", input_tokens=10) as r:
            r.commit(input_tokens=10, output_tokens=10)
        await m.guard(user, model="m")
        await m.record(user, model="m", input_tokens=20)

    watcher = asyncio.create_task(watch())
    assert (await m.start()).authenticated
    # Twenty first loads, lease requests, deliveries, a reload and a manual event, all at once where they can be.
    await asyncio.gather(*(calls(u) for u in users for _ in range(3)))
    assert await m.flush()
    assert await m.refresh(users[0])
    await m.record_manual(users[0], cost=0.5)
    assert await m.shutdown()
    stop.set()
    await watcher
    # Each view was loaded (its session-start callback run) on the loop's own thread, and no thread was started.
    assert loaded_on == [loop_thread] * 20
    assert started == set()
    assert m.stats.lease_requests and m.stats.sent == 20 * 6 and m.stats.queued == 0
    usage = await asyncio.to_thread(product.usage, users[0])
    assert near(usage["total_cost"], 3 * 0.04 + 0.5)


def test_an_async_meter_made_before_any_loop_delivers_from_its_own_task(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 10, **PRICED})
    m = AsyncMeter(api_key=product.key, base_url=product.url, flush_interval=0.1)

    async def main() -> None:
        await m.record(user, model="m", input_tokens=1000)
        # Delivered by the task the first call started, without flush().
        while m.stats.sent < 1:
            await asyncio.sleep(0.05)
        await m.shutdown()

    asyncio.run(asyncio.wait_for(main(), 30))
    assert near(product.usage(user)["total_cost"], 1.0)


def test_a_delivery_cancelled_mid_request_gives_its_pass_back(product: Product, proxy: FaultProxy) -> None:
    user = product.create_user({"max_spend_per_period": 10, **PRICED})
    m = AsyncMeter(api_key=product.key, base_url=proxy.api_url, flush_interval=0.05)
    proxy.hold(r"POST /events/batch")

    async def main() -> None:
        await m.record(user, model="m", input_tokens=1000)
        while proxy.count(r"POST /events/batch") < 1:
            await asyncio.sleep(0.02)

    # The loop ends while the meter's own delivery task has its request on the way: the task is cancelled.
    asyncio.run(main())
    proxy.release()
    # The pass it held is given back: the exit hook (what atexit runs, no loop left) delivers, not waits forever.
    done = threading.Thread(target=m._close_at_exit, daemon=True)
    done.start()
    done.join(30)
    assert not done.is_alive(), "the exit hook still waits for the cancelled pass"
    assert near(product.usage(user)["total_cost"], 1.0)


def test_exit_delivers_what_an_async_meter_queued(product: Product) -> None:
    user = product.create_user({"max_spend_per_period": 10, **PRICED})
    script = textwrap.dedent("""
        import asyncio, os, sys
        from meterline import AsyncMeter
        m = AsyncMeter(api_key=os.environ["KEY"], base_url=os.environ["URL"], flush_interval=3600, shutdown_timeout=5)
        asyncio.run(m.record(sys.argv[1], model="m", input_tokens=1000))
        print("recorded")
    """)
    env = {**os.environ, "KEY": product.key, "URL": product.url}
    r = subprocess.run([sys.executable, "-c", script, user], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "recorded" in r.stdout, r.stderr
    assert near(product.usage(user)["total_cost"], 1.0)


def test_a_blocking_model_client_needs_a_blocking_meter(product: Product) -> None:
    m = AsyncMeter(api_key=product.key, base_url=product.url)
    with pytest.raises(TypeError, match="AsyncMeter meters async ones"):
        wrap(OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1"), m)
