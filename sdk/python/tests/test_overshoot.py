"""Concurrent calls near a cap on a default plan (no pre_call_estimate), across threads and asyncio
tasks: each call in flight holds the user's typical call (the first one its estimate), so the cap is
passed by at most the bound docs/concurrency-and-leases.md gives. And the estimate reads the request's output limit."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

from meterline import AsyncMeter, LimitExceededError, Meter
from meterline.openai import wrap
from meterline.recent_calls import RecentCalls
from meterline.reservation import reservation_of

from .mock_providers import USAGE_OUT, MockProvider
from .support import Product, eventually

CAP = 0.05
RATES = {"gpt-4o": {"input": 0, "output": 0.125}}
# What the mock answers costs $0.00375 a call.
CALL = USAGE_OUT / 1000 * 0.125
MESSAGES: Any = [{"role": "user", "content": "What is the weather in Paris?"}]
# Every call costs the same here and reserves at least its cost, so the documented bound is one call's
# cost past the cap: the real cost of the last call admitted, nothing from the others.
BOUND = CAP + CALL + 1e-9


def default_user(product: Product, **plan: Any) -> str:
    return product.create_user({"max_spend_per_period": CAP, "cost_rates": RATES, **plan})


def fifty_in_threads(provider: MockProvider, *clients: OpenAI) -> int:
    """50 calls at once from 50 threads (taking the clients in turn), none answered before every one was sent or
    refused; how many ran."""
    lock = threading.Lock()
    ran, blocked = [0], [0]
    sent_before = len(provider.requests)

    def one(client: OpenAI) -> None:
        try:
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        except LimitExceededError:
            with lock:
                blocked[0] += 1
            return
        with lock:
            ran[0] += 1

    provider.answering.clear()
    threads = [threading.Thread(target=one, args=(clients[i % len(clients)],)) for i in range(50)]
    for t in threads:
        t.start()
    try:
        eventually(lambda: len(provider.requests) - sent_before + blocked[0] == 50, what="every call sent or refused")
    finally:
        provider.answering.set()
    for t in threads:
        t.join()
    assert ran[0] + blocked[0] == 50
    assert len(provider.requests) - sent_before == ran[0], "a refused call sends nothing"
    return ran[0]


async def fifty_in_tasks(provider: MockProvider, client: AsyncOpenAI) -> int:
    """50 calls at once as asyncio tasks, none answered before every one was sent or refused; how many ran."""
    sent_before = len(provider.requests)

    async def one() -> bool:
        try:
            await client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        except LimitExceededError:
            return False
        return True

    provider.answering.clear()
    tasks = [asyncio.create_task(one()) for _ in range(50)]
    try:
        deadline = time.monotonic() + 20
        # A refused task is done; a sent one waits for its answer.
        while len(provider.requests) - sent_before + sum(t.done() for t in tasks) < 50:
            assert time.monotonic() < deadline, "not every call was sent or refused"
            await asyncio.sleep(0.01)
    finally:
        provider.answering.set()
    ran = sum(await asyncio.gather(*tasks))
    assert len(provider.requests) - sent_before == ran, "a refused call sends nothing"
    return ran


def spent(product: Product, meter: Meter, user: str) -> float:
    assert meter.flush(timeout=30)
    total: float = product.usage(user)["total_cost"]
    return total


@pytest.mark.parametrize("warm", [False, True])
def test_fifty_threads_on_a_default_plan_overshoot_a_small_cap_by_at_most_the_bound(
    product: Product, provider: MockProvider, warm: bool
) -> None:
    user = default_user(product)
    meter = Meter(api_key=product.key, base_url=product.url)
    client = wrap(OpenAI(api_key="sk-test", base_url=provider.base, max_retries=0), meter, user_id=user)
    if warm:
        # One call first: its cost is what the next ones reserve.
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    ran = fifty_in_threads(provider, client)
    assert ran >= (12 if warm else 1), f"only {ran} calls ran"
    total = spent(product, meter, user)
    assert total <= BOUND, f"spent ${total} of a ${CAP} cap with calls of ${CALL}: past the bound ${BOUND}"
    meter.shutdown()


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("kind", [Meter, AsyncMeter])
async def test_fifty_asyncio_tasks_on_a_default_plan_overshoot_a_small_cap_by_at_most_the_bound(
    product: Product, provider: MockProvider, warm: bool, kind: type[Meter | AsyncMeter]
) -> None:
    user = default_user(product)
    meter = kind(api_key=product.key, base_url=product.url)
    client = wrap(AsyncOpenAI(api_key="sk-test", base_url=provider.base, max_retries=0), meter, user_id=user)
    if warm:
        await client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    ran = await fifty_in_tasks(provider, client)
    assert ran >= (12 if warm else 1), f"only {ran} calls ran"
    assert await (meter.aflush(timeout=30) if isinstance(meter, Meter) else meter.flush(timeout=30))
    total: float = (await asyncio.to_thread(product.usage, user))["total_cost"]
    assert total <= BOUND, f"spent ${total} of a ${CAP} cap with calls of ${CALL}: past the bound ${BOUND}"
    await (meter.ashutdown() if isinstance(meter, Meter) else meter.shutdown())


def test_with_leases_two_replicas_of_25_threads_overshoot_by_at_most_the_bound_each(
    product: Product, provider: MockProvider
) -> None:
    # Each replica takes its calls' typical cost from its lease, and the service grants no more than the
    # cap across them: each replica can pass it by the bound, one call here.
    user = default_user(product)
    replicas = [Meter(api_key=product.key, base_url=product.url, leases=True) for _ in range(2)]
    clients = [
        wrap(OpenAI(api_key="sk-test", base_url=provider.base, max_retries=0), m, user_id=user) for m in replicas
    ]
    for c in clients:
        c.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    fifty_in_threads(provider, *clients)
    for m in replicas:
        assert m.flush(timeout=30)
    total: float = product.usage(user)["total_cost"]
    assert total <= CAP + 2 * CALL + 1e-9, f"spent ${total} of a ${CAP} cap with two replicas: past the bound"
    for m in replicas:
        m.shutdown()


def test_the_estimate_takes_the_requests_output_limit_before_the_buffer(
    product: Product, provider: MockProvider
) -> None:
    # pre_call_estimate with the default 4,096-token buffer: $0.512 a call, past the $0.05 cap.
    user = default_user(product, pre_call_estimate=True)
    meter = Meter(api_key=product.key, base_url=product.url)
    client = wrap(OpenAI(api_key="sk-test", base_url=provider.base, max_retries=0), meter, user_id=user)
    with pytest.raises(LimitExceededError, match=r"estimate of \$0\.5120"):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert len(provider.requests) == 0
    # 30 output tokens: $0.00375, under the cap.
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_tokens=30)
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_completion_tokens=30)
    client.responses.create(model="gpt-4o", input="What is the weather in Paris?", max_output_tokens=30)
    assert len(provider.requests) == 3
    # max_completion_tokens wins over the older max_tokens.
    with pytest.raises(LimitExceededError):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_tokens=30, max_completion_tokens=100_000)
    assert len(provider.requests) == 3
    meter.shutdown()


def test_a_call_reserves_the_typical_call_once_known_else_its_estimate() -> None:
    cost = lambda i, o: i * 0.001 + o * 0.002  # noqa: E731
    estimate = reservation_of(False, None, lambda: 100, None, 4096, cost)
    assert estimate == (100 * 0.001 + 4096 * 0.002, 4196.0, False)
    assert reservation_of(False, None, lambda: 100, 50, 4096, cost) == (100 * 0.001 + 50 * 0.002, 150.0, False)
    assert reservation_of(True, None, lambda: 100, 50, 4096, cost).exact
    recent = RecentCalls()
    for c, t in [(0.5, 10), (0.2, 30), (0.1, 5)]:
        recent.add(c, t)
    # The typical call: the largest of the last eight, cost and tokens apart; the input is not read.
    assert reservation_of(False, recent, lambda: 1 // 0, None, 4096, cost) == (0.5, 30, False)
    for _ in range(8):
        recent.add(0.01, 1)
    assert reservation_of(False, recent, lambda: 1 // 0, None, 4096, cost) == (0.01, 1, False)
    # pre_call_estimate always estimates.
    assert reservation_of(True, recent, lambda: 0, 10, 4096, cost) == (10 * 0.002, 10.0, True)
