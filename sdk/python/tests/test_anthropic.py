"""meterline.anthropic with the real ``anthropic`` package against a local server speaking its wire format."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import Anthropic, AsyncAnthropic

from meterline import LimitExceededError, Meter
from meterline.anthropic import wrap

from .mock_providers import CACHE_READ, CACHE_WRITE, USAGE_IN, USAGE_OUT, MockProvider
from .support import Product, near

PLAN = {"max_spend_per_period": 100, "cost_rates": {"claude": {"input": 3, "output": 15}}, "default_tool_cost": 0.02}
IN = USAGE_IN + CACHE_READ + CACHE_WRITE  # cache reads and writes count as input
CALL_COST = IN / 1000 * 3 + USAGE_OUT / 1000 * 15
MESSAGES: Any = [{"role": "user", "content": "Hi"}]
TOOLS: Any = [{"name": "get_weather", "description": "w", "input_schema": {"type": "object"}}]


def base(provider: MockProvider) -> str:
    return provider.base[: -len("/v1")]


def test_messages_plain_streamed_and_the_stream_helper(product: Product, provider: MockProvider) -> None:
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    client = wrap(Anthropic(api_key="sk-ant", base_url=base(provider), max_retries=0), meter, user_id=user)
    msg = client.messages.create(model="claude-3-5-sonnet", max_tokens=50, messages=MESSAGES, tools=TOOLS)
    assert msg.content[0].type == "text"
    events = list(client.messages.create(model="claude-3-5-sonnet", max_tokens=50, messages=MESSAGES, stream=True))
    assert events[-1].type == "message_stop"
    with client.messages.stream(model="claude-3-5-sonnet", max_tokens=50, messages=MESSAGES, tools=TOOLS) as s:
        final = s.get_final_message()
    assert final.usage.output_tokens == USAGE_OUT
    assert meter.flush()
    u = product.usage(user)
    assert u["total_tokens"] == 3 * (IN + USAGE_OUT)
    assert near(u["total_cost"], 3 * CALL_COST + 2 * 0.02)
    assert provider.count("/messages") == 3
    meter.shutdown()


def test_a_stream_left_before_its_usage_counts_the_text_received(product: Product, provider: MockProvider) -> None:
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    client = wrap(Anthropic(api_key="sk-ant", base_url=base(provider), max_retries=0), meter, user_id=user)
    stream = client.messages.create(model="claude-3-5-sonnet", max_tokens=50, messages=MESSAGES, stream=True)
    for event in stream:
        if event.type == "content_block_stop":
            break
    stream.close()
    assert meter.flush()
    # "Hello!" received (6 characters, 2 tokens at four a token), not message_start's placeholder of 1.
    assert product.usage(user)["total_tokens"] == IN + 2
    meter.shutdown()


def test_metadata_json_cannot_carry_is_refused_where_the_client_is_wrapped(product: Product) -> None:
    meter = Meter(api_key=product.key, base_url=product.url)
    with pytest.raises(TypeError, match="JSON"):
        wrap(Anthropic(api_key="sk-ant"), meter, user_id="u", metadata={"trace": object()})
    meter.shutdown()


def test_a_hard_gate_sends_nothing(product: Product, provider: MockProvider) -> None:
    user = product.create_user({"max_spend_per_period": 0})
    meter = Meter(api_key=product.key, base_url=product.url)
    client = wrap(Anthropic(api_key="sk-ant", base_url=base(provider)), meter, user_id=user)
    with pytest.raises(LimitExceededError):
        client.messages.create(model="claude", max_tokens=5, messages=MESSAGES)
    with pytest.raises(LimitExceededError), client.messages.stream(model="claude", max_tokens=5, messages=MESSAGES):
        pass
    assert provider.count("/messages") == 0
    meter.shutdown()


async def test_async_client(product: Product, provider: MockProvider) -> None:
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    client = wrap(AsyncAnthropic(api_key="sk-ant", base_url=base(provider), max_retries=0), meter, user_id=user)
    await client.messages.create(model="claude", max_tokens=5, messages=MESSAGES)
    async with client.messages.stream(model="claude", max_tokens=5, messages=MESSAGES) as s:
        async for _ in s.text_stream:
            pass
    assert await meter.aflush()
    u = product.usage(user)
    assert u["total_tokens"] == 2 * (IN + USAGE_OUT) and near(u["total_cost"], 2 * CALL_COST)
    await meter.ashutdown()


def test_raw_responses_and_bodies_the_caller_reads_are_metered_once(product: Product, provider: MockProvider) -> None:
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    client = wrap(Anthropic(api_key="sk-ant", base_url=base(provider), max_retries=0), meter, user_id=user)
    raw = client.messages.with_raw_response.create(model="claude", max_tokens=5, messages=MESSAGES)
    assert raw.parse().usage.output_tokens == USAGE_OUT
    # A stream whose body the caller reads itself (forwarding the provider's events): its final usage.
    with client.messages.with_streaming_response.create(
        model="claude", max_tokens=5, messages=MESSAGES, stream=True
    ) as r:
        forwarded = list(r.iter_lines())
    assert "event: message_stop" in forwarded
    assert meter.flush()
    u = product.usage(user)
    assert u["total_tokens"] == 2 * (IN + USAGE_OUT) and near(u["total_cost"], 2 * CALL_COST)
    meter.shutdown()
