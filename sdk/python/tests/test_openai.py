"""meterline.openai with the real ``openai`` package against a local server speaking its wire format."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

from meterline import LimitExceededError, Meter, MeterError, MissingUserError, UsageEvent
from meterline.openai import wrap
from meterline.pricing import estimate_tokens

from .mock_providers import USAGE_IN, USAGE_OUT, MockProvider
from .support import Product, near

PLAN = {"max_spend_per_period": 100, "cost_rates": {"gpt-4o": {"input": 2.5, "output": 10}}, "default_tool_cost": 0.02}
CALL_COST = USAGE_IN / 1000 * 2.5 + USAGE_OUT / 1000 * 10
MESSAGES: Any = [{"role": "user", "content": "Hi"}]
TOOLS: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def setup(product: Product, provider: MockProvider, plan: dict[str, Any] = PLAN) -> tuple[Meter, str, OpenAI]:
    user = product.create_user(plan)
    meter = Meter(api_key=product.key, base_url=product.url)
    client = wrap(OpenAI(api_key="sk-test", base_url=provider.base, max_retries=0), meter, user_id=user)
    return meter, user, client


def setup_async(product: Product, provider: MockProvider) -> tuple[Meter, str, AsyncOpenAI]:
    """The async client, metered by a Meter (which meters async clients too)."""
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    client = wrap(AsyncOpenAI(api_key="sk-test", base_url=provider.base, max_retries=0), meter, user_id=user)
    return meter, user, client


def totals(product: Product, meter: Meter, user: str) -> tuple[float, int]:
    assert meter.flush()
    u = product.usage(user)
    return u["total_cost"], u["total_tokens"]


def counted(product: Product, meter: Meter, user: str, calls: int) -> bool:
    """Whether the service counts exactly ``calls`` calls of the mock's usage (no tools) for the user."""
    cost, tokens = totals(product, meter, user)
    return near(cost, calls * CALL_COST) and tokens == calls * (USAGE_IN + USAGE_OUT)


def test_chat_completions_are_metered_with_the_providers_usage_and_tools(
    product: Product, provider: MockProvider
) -> None:
    meter, user, client = setup(product, provider)
    out = client.chat.completions.create(model="gpt-4o-2024-08-06", messages=MESSAGES)
    assert out.choices[0].message.content == "Hello!"
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES, tools=TOOLS)
    cost, tokens = totals(product, meter, user)
    assert near(cost, 2 * CALL_COST + 0.02) and tokens == 2 * (USAGE_IN + USAGE_OUT)
    meter.shutdown()


def test_a_stream_that_did_not_ask_for_usage_is_metered_and_the_usage_chunk_hidden(
    product: Product, provider: MockProvider
) -> None:
    meter, user, client = setup(product, provider)
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True))
    assert provider.requests[-1][1]["stream_options"] == {"include_usage": True}
    assert all(c.choices for c in chunks) and "".join(c.choices[0].delta.content or "" for c in chunks) == "Hello!"
    asked = list(
        client.chat.completions.create(
            model="gpt-4o", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    assert asked[-1].usage is not None and asked[-1].choices == []
    assert counted(product, meter, user, 2)
    meter.shutdown()


def test_a_stream_read_to_its_end_records_the_tokens_the_provider_reported(
    product: Product, provider: MockProvider
) -> None:
    meter, user, client = setup(product, provider)
    # 400 characters of URLs and code: more than four per token, so an estimate from them would say 100+.
    text = "https://example.com/a/b/c?q=1 " * 13 + "x" * 10
    chunks = list(
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True, extra_body={"mock_text": text})
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks).endswith(text)
    assert counted(product, meter, user, 1)
    meter.shutdown()


def test_a_stream_left_early_is_metered_once_with_what_it_showed(product: Product, provider: MockProvider) -> None:
    meter, user, client = setup(product, provider)
    stream = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    for _ in stream:
        break
    stream.close()
    del stream
    cost, tokens = totals(product, meter, user)
    # No usage had arrived: the input estimate and about a token per four characters received.
    assert tokens > 0 and cost > 0
    assert meter.state(user) is not None
    meter.shutdown()


def test_responses_api_plain_and_streamed_with_tool_calls(product: Product, provider: MockProvider) -> None:
    meter, user, client = setup(product, provider)
    r = client.responses.create(model="gpt-4o", input="Hi", tools=[{"type": "web_search"}])
    assert r.output_text == "Hello!"
    events = list(client.responses.create(model="gpt-4o", input="Hi", stream=True))
    assert events[-1].type == "response.completed"
    cost, tokens = totals(product, meter, user)
    # function_call get_weather and web_search_call: two tools at $0.02.
    assert near(cost, 2 * CALL_COST + 0.04) and tokens == 2 * (USAGE_IN + USAGE_OUT)
    meter.shutdown()


def test_raw_responses_and_the_sdks_helpers_are_metered_once(product: Product, provider: MockProvider) -> None:
    meter, user, client = setup(product, provider)
    raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=MESSAGES)
    assert raw.parse().choices[0].message.content == "Hello!"
    with client.chat.completions.stream(model="gpt-4o", messages=MESSAGES) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.content == "Hello!"
    assert counted(product, meter, user, 2)
    assert provider.count("/chat/completions") == 2
    meter.shutdown()


def test_a_raw_stream_is_metered_as_read_and_a_body_read_by_the_caller_is_sent_as_asked(
    product: Product, provider: MockProvider
) -> None:
    meter, user, client = setup(product, provider)
    raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=MESSAGES, stream=True)
    assert provider.requests[-1][1]["stream_options"] == {"include_usage": True}
    chunks = list(raw.parse())
    assert chunks and all(c.choices for c in chunks), "the usage chunk the caller did not ask for is hidden"
    assert counted(product, meter, user, 1)
    meter.shutdown()


@pytest.mark.parametrize("compressed", [False, True])
def test_a_body_the_caller_reads_itself_is_metered_from_its_bytes(
    product: Product, provider: MockProvider, compressed: bool
) -> None:
    meter, user, client = setup(product, provider)
    provider.gzip = compressed
    estimate = estimate_tokens({"messages": MESSAGES, "tools": None})
    # with_streaming_response: sent as the caller asked (no usage chunk is added: nothing could hide it),
    # and metered from the bytes as the caller reads them. A chat stream without usage: the input estimate
    # and a token per four characters of the text it showed ("Hello!").
    with client.chat.completions.with_streaming_response.create(model="gpt-4o", messages=MESSAGES, stream=True) as r:
        text = b"".join(r.iter_bytes()).decode()
    assert "stream_options" not in provider.requests[-1][1] and "[DONE]" in text and '"usage"' not in text
    _, tokens = totals(product, meter, user)
    assert tokens == estimate + 2
    # A complete answer and a Responses API stream: the provider's usage.
    with client.chat.completions.with_streaming_response.create(model="gpt-4o", messages=MESSAGES) as r:
        assert r.parse().choices[0].message.content == "Hello!"
        assert r.headers.get("content-encoding") == ("gzip" if compressed else None)
    with client.responses.with_streaming_response.create(model="gpt-4o", input="Hi", stream=True) as r:
        lines = list(r.iter_lines())
    assert any("response.completed" in line for line in lines), "the caller reads every line"
    _, after = totals(product, meter, user)
    assert after - tokens == 2 * (USAGE_IN + USAGE_OUT)
    # Left unread (closed by the with block): the estimate.
    with client.chat.completions.with_streaming_response.create(model="gpt-4o", messages=MESSAGES) as r:
        assert r.status_code == 200
    _, unread = totals(product, meter, user)
    assert unread - after == estimate
    meter.shutdown()


async def test_an_async_body_the_caller_reads_itself_is_metered_from_its_bytes(
    product: Product, provider: MockProvider
) -> None:
    meter, user, client = setup_async(product, provider)
    async with client.chat.completions.with_streaming_response.create(model="gpt-4o", messages=MESSAGES) as r:
        body = b"".join([chunk async for chunk in r.iter_bytes()])
    assert b'"usage"' in body
    async with client.responses.with_streaming_response.create(model="gpt-4o", input="Hi", stream=True) as r:
        lines = [line async for line in r.iter_lines()]
    assert any("response.completed" in line for line in lines)
    assert await meter.aflush()
    assert product.usage(user)["total_tokens"] == 2 * (USAGE_IN + USAGE_OUT)
    await meter.ashutdown()


async def test_async_raw_responses_are_metered_with_the_providers_usage(
    product: Product, provider: MockProvider
) -> None:
    meter, user, client = setup_async(product, provider)

    # parse() of an async raw response: a plain call in openai 1.x, a coroutine elsewhere.
    async def parsed(raw: Any) -> Any:
        out = raw.parse()
        return await out if inspect.isawaitable(out) else out

    raw = await client.chat.completions.with_raw_response.create(model="gpt-4o", messages=MESSAGES)
    assert (await parsed(raw)).choices[0].message.content == "Hello!"
    streamed = await client.chat.completions.with_raw_response.create(model="gpt-4o", messages=MESSAGES, stream=True)
    chunks = [c async for c in await parsed(streamed)]
    assert chunks and all(c.choices for c in chunks)
    assert await meter.aflush()
    u = product.usage(user)
    assert near(u["total_cost"], 2 * CALL_COST) and u["total_tokens"] == 2 * (USAGE_IN + USAGE_OUT)
    await meter.ashutdown()


def test_a_hard_gate_sends_nothing_and_no_user_fails_before_sending(product: Product, provider: MockProvider) -> None:
    meter, _user, client = setup(product, provider, {"max_spend_per_period": 0})
    with pytest.raises(LimitExceededError):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    anonymous = wrap(OpenAI(api_key="sk-test", base_url=provider.base), meter)
    with pytest.raises(MissingUserError):
        anonymous.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert provider.count("/chat/completions") == 0
    # Other endpoints pass through; the user can also come from the context.
    free = product.create_user()
    with meter.user(free):
        anonymous.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert provider.count("/chat/completions") == 1
    with pytest.raises(ValueError) as twice:
        wrap(anonymous, meter)
    assert isinstance(twice.value, MeterError)
    meter.shutdown()


def test_one_wrapped_client_serves_conversations_with_their_own_session_caps(
    product: Product, provider: MockProvider
) -> None:
    meter, user, _ = setup(product, provider, {**PLAN, "max_spend_per_session": 0.5})
    client = wrap(OpenAI(api_key="sk-test", base_url=provider.base), meter)
    with meter.user(user, session_id="conv-a"):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)  # $0.33
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)  # $0.66: session a at its cap
        with pytest.raises(LimitExceededError):
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    with meter.user(user, session_id="conv-b"):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert provider.count("/chat/completions") == 3
    # A client wrapped for one conversation: its session_id is every call's, as the TypeScript wrapper's option.
    conversation = wrap(OpenAI(api_key="sk-test", base_url=provider.base), meter, user_id=user, session_id="conv-a")
    with pytest.raises(LimitExceededError):
        conversation.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    seen: list[UsageEvent] = []
    meter.on_usage(seen.append)
    wrap(
        OpenAI(api_key="sk-test", base_url=provider.base), meter, user_id=user, session_id="conv-c"
    ).chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert [e.session_id for e in seen] == ["conv-c"] and provider.count("/chat/completions") == 4
    with pytest.raises(TypeError, match="session_id"):
        wrap(OpenAI(api_key="sk-test", base_url=provider.base), meter, session_id="")
    meter.shutdown()


async def test_async_client_plain_and_streamed(product: Product, provider: MockProvider) -> None:
    meter, user, client = setup_async(product, provider)
    out = await client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert out.choices[0].message.content == "Hello!"
    stream = await client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    chunks = [c async for c in stream]
    assert all(c.choices for c in chunks)
    assert await meter.aflush()
    u = product.usage(user)
    assert near(u["total_cost"], 2 * CALL_COST) and u["total_tokens"] == 2 * (USAGE_IN + USAGE_OUT)
    await meter.ashutdown()


def test_a_stream_never_read_is_settled_by_shutdown(product: Product, provider: MockProvider) -> None:
    meter, user, client = setup(product, provider)
    kept = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    assert meter.state(user) is not None
    assert meter.shutdown()
    # Settled with the input estimate before the final delivery.
    first = product.usage(user)["total_tokens"]
    assert first > 0
    kept.close()
    # A later invocation of a serverless handler: another stream left open, another shutdown settles it too.
    again = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    assert meter.shutdown()
    assert product.usage(user)["total_tokens"] > first
    again.close()


# One held reservation (4,096 buffer tokens of output: about $41) refuses the next call.
CAPPED = {**PLAN, "max_spend_per_period": 50, "pre_call_estimate": True}


def refused(client: OpenAI) -> bool:
    try:
        client.responses.create(model="gpt-4o", input="x")
    except LimitExceededError:
        return True
    return False


def test_a_background_response_holds_its_reservation_until_read_final_then_counts_once(
    product: Product, provider: MockProvider
) -> None:
    meter, user, client = setup(product, provider, CAPPED)
    provider.running = True
    queued = client.responses.create(model="gpt-4o", input="Research the weather", background=True)
    assert queued.status == "queued"
    assert refused(client), "the queued response holds its reservation"
    assert client.responses.retrieve(queued.id).status == "in_progress"
    assert refused(client), "a running response still holds it"

    provider.running = False
    raw = client.responses.with_raw_response.retrieve(queued.id)
    assert raw.status_code == 200 and raw.parse().status == "completed"
    assert not refused(client), "settled by the raw read: the reservation went back"
    done = client.responses.retrieve(queued.id)
    assert done.status == "completed" and done.output_text == "Hello!"
    # The background call once, though read final twice, and the call that then ran.
    assert counted(product, meter, user, 2)
    meter.shutdown()


def test_a_background_response_read_as_a_stream_counts_and_a_cancelled_one_gives_its_hold_back(
    product: Product, provider: MockProvider
) -> None:
    meter, user, client = setup(product, provider, CAPPED)
    first = client.responses.create(model="gpt-4o", input="a", background=True)
    events = list(client.responses.retrieve(first.id, stream=True))
    assert events[-1].type == "response.completed"
    assert counted(product, meter, user, 1)

    second = client.responses.create(model="gpt-4o", input="b", background=True)
    assert refused(client), "held while queued"
    assert client.responses.cancel(second.id).status == "cancelled"
    assert not refused(client), "given back: the next call runs"
    assert counted(product, meter, user, 2), "the cancelled one recorded nothing"
    meter.shutdown()


def test_a_background_response_streamed_and_left_before_its_end_is_held_until_read_back(
    product: Product, provider: MockProvider
) -> None:
    meter, user, client = setup(product, provider, CAPPED)
    stream = client.responses.create(model="gpt-4o", input="write a report", background=True, stream=True)
    first = next(iter(stream))
    assert first.type == "response.created"
    stream.close()
    assert refused(client), "held while it runs on"

    events = list(client.responses.retrieve(first.response.id, stream=True))
    assert events[-1].type == "response.completed"
    assert counted(product, meter, user, 1), "counted in full, once"
    assert not refused(client)
    meter.shutdown()


async def test_an_async_background_response_is_settled_when_read_final(
    product: Product, provider: MockProvider
) -> None:
    meter, user, client = setup_async(product, provider)
    queued = await client.responses.create(model="gpt-4o", input="a", background=True)
    stream = await client.responses.retrieve(queued.id, stream=True)
    assert [e.type async for e in stream][-1] == "response.completed"
    assert counted(product, meter, user, 1)
    meter.shutdown()


def test_a_background_response_never_read_back_is_settled_by_shutdown(product: Product, provider: MockProvider) -> None:
    meter, user, client = setup(product, provider)
    queued = client.responses.create(model="gpt-4o", input="Research the weather in Paris", background=True)
    assert queued.status == "queued"
    assert meter.shutdown()
    u = product.usage(user)
    # The input estimate, no output seen.
    assert u["total_tokens"] > 0 and u["total_cost"] > 0
