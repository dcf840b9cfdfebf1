"""meterline.langchain with the real ``langchain-core`` and ``langchain-openai`` against a local
server speaking OpenAI's wire format."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import RunnableLambda
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from meterline import AsyncMeter, LimitExceededError, Meter, UsageEvent
from meterline.integrations.langchain import read_result
from meterline.langchain import MeterCallbackHandler

from .mock_providers import USAGE_IN, USAGE_OUT, MockProvider
from .support import Product, eventually, near

PLAN = {"max_spend_per_period": 100, "cost_rates": {"gpt-4o": {"input": 2.5, "output": 10}}}
CALL_COST = USAGE_IN / 1000 * 2.5 + USAGE_OUT / 1000 * 10


def test_invoke_and_stream_are_metered_once_each(product: Product, provider: MockProvider) -> None:
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    handler = MeterCallbackHandler(meter, user_id=user, session_id="conv-1")
    seen: list[UsageEvent] = []
    meter.on_usage(seen.append)
    model = ChatOpenAI(
        model="gpt-4o",
        api_key=SecretStr("sk-test"),
        base_url=provider.base,
        max_retries=0,
        stream_usage=True,
    )
    out = model.invoke("Hi", config={"callbacks": [handler]})
    assert out.content == "Hello!"
    text = "".join(str(c.content) for c in model.stream("Hi", config={"callbacks": [handler]}))
    assert text == "Hello!"
    assert meter.flush()
    assert [e.session_id for e in seen] == ["conv-1", "conv-1"]
    u = product.usage(user)
    assert u["total_tokens"] == 2 * (USAGE_IN + USAGE_OUT) and near(u["total_cost"], 2 * CALL_COST)
    meter.shutdown()


async def test_a_hard_gate_stops_the_run_before_the_provider(product: Product, provider: MockProvider) -> None:
    user = product.create_user({"max_spend_per_period": 0})
    meter = Meter(api_key=product.key, base_url=product.url)
    model = chat(provider, callbacks=[MeterCallbackHandler(meter, user_id=user)])
    with pytest.raises(LimitExceededError):
        model.invoke("Hi")
    with pytest.raises(LimitExceededError):
        await model.ainvoke("Hi")
    assert provider.count("/chat/completions") == 0
    meter.shutdown()


def test_a_stream_left_with_break_is_settled_once_after_idle(product: Product, provider: MockProvider) -> None:
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    handler = MeterCallbackHandler(meter, user_id=user, idle=0.2)
    model = ChatOpenAI(model="gpt-4o", api_key=SecretStr("sk-test"), base_url=provider.base, max_retries=0)
    stream = model.stream("Hi", config={"callbacks": [handler]})
    for _ in stream:
        break
    eventually(lambda: meter.stats.queued + meter.stats.sent == 1, what="the left run to be settled")
    assert handler._runs == {}
    # The next run of the same handler is metered as usual: one event each.
    model.invoke("Hi", config={"callbacks": [handler]})
    assert meter.flush()
    assert meter.stats.sent == 2
    assert product.usage(user)["total_tokens"] > 0
    meter.shutdown()


async def cancelled_once_sent(provider: MockProvider, call: Coroutine[Any, Any, object]) -> None:
    """Runs ``call`` in a task of its own and cancels it once the provider has the request (held unanswered)."""
    provider.answering.clear()
    try:
        task = asyncio.create_task(call)
        while provider.count("/chat/completions") == 0:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        provider.answering.set()


async def test_a_cancelled_call_the_provider_had_is_metered_with_its_estimate(
    product: Product, provider: MockProvider
) -> None:
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    model = ChatOpenAI(model="gpt-4o", api_key=SecretStr("sk-test"), base_url=provider.base, max_retries=0)
    handler = MeterCallbackHandler(meter, user_id=user)

    async def read() -> None:
        async for _ in model.astream("Hi", config={"callbacks": [handler]}):
            pass

    await cancelled_once_sent(provider, read())
    # The provider may have worked on it: the input estimate is recorded, not given back.
    assert meter.flush()
    assert meter.stats.sent == 1
    assert product.usage(user)["total_tokens"] > 0
    meter.shutdown()


def chat(provider: MockProvider, **options: Any) -> ChatOpenAI:
    """gpt-4o at the mock provider, without retries; ``options`` such as the model's ``callbacks``."""
    return ChatOpenAI(
        model="gpt-4o",
        api_key=SecretStr("sk-test"),
        base_url=provider.base,
        max_retries=0,
        stream_usage=True,
        **options,
    )


async def test_with_an_async_meter_ainvoke_and_astream_are_metered_once_each(
    product: Product, provider: MockProvider
) -> None:
    user = product.create_user(PLAN)
    meter = AsyncMeter(api_key=product.key, base_url=product.url)
    handler = MeterCallbackHandler(meter, user_id=user, session_id="conv-2")
    seen: list[UsageEvent] = []
    meter.on_usage(seen.append)
    model = chat(provider)
    assert (await model.ainvoke("Hi", config={"callbacks": [handler]})).content == "Hello!"
    text = "".join([str(c.content) async for c in model.astream("Hi", config={"callbacks": [handler]})])
    assert text == "Hello!"
    assert await meter.flush()
    assert [e.session_id for e in seen] == ["conv-2", "conv-2"]
    usage = await asyncio.to_thread(product.usage, user)
    assert usage["total_tokens"] == 2 * (USAGE_IN + USAGE_OUT) and near(usage["total_cost"], 2 * CALL_COST)
    # Each run's watch on its task went with the run.
    assert handler._runs == {} and handler._watches == {}
    blocked = product.create_user({"max_spend_per_period": 0})
    with pytest.raises(LimitExceededError):
        await model.ainvoke("Hi", config={"callbacks": [MeterCallbackHandler(meter, user_id=blocked)]})
    assert provider.count("/chat/completions") == 2
    # A sync run needs a blocking Meter: said at the call, which it stops (not swallowed by LangChain).
    with pytest.raises(TypeError, match="blocking"):
        await asyncio.to_thread(model.invoke, "Hi", config={"callbacks": [handler]})
    assert provider.count("/chat/completions") == 2
    assert await meter.shutdown()


def test_one_handler_meters_a_model_used_with_invoke_and_ainvoke_each_with_its_real_usage(
    product: Product, provider: MockProvider
) -> None:
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    model = chat(provider, callbacks=[MeterCallbackHandler(meter, user_id=user)])
    seen: list[UsageEvent] = []
    meter.on_usage(seen.append)
    model.invoke("Hi")
    asyncio.run(model.ainvoke("Hi"))
    model.invoke("Hi")
    assert meter.flush()
    assert [(e.input_tokens, e.output_tokens) for e in seen] == [(USAGE_IN, USAGE_OUT)] * 3
    assert product.usage(user)["total_tokens"] == 3 * (USAGE_IN + USAGE_OUT)
    meter.shutdown()


async def test_a_cancelled_ainvoke_is_metered_with_its_estimate_when_its_task_ends(
    product: Product, provider: MockProvider
) -> None:
    """LangChain's ``agenerate`` calls no handler when its task is cancelled: the run's task ending settles it."""
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    handler = MeterCallbackHandler(meter, user_id=user)
    await cancelled_once_sent(provider, chat(provider).ainvoke("Hi", config={"callbacks": [handler]}))
    # The provider may have worked on it: the input estimate is recorded, not given back; the hold is gone.
    assert handler._runs == {}
    assert meter.flush()
    assert meter.stats.sent == 1
    assert (await asyncio.to_thread(product.usage, user))["total_tokens"] > 0
    meter.shutdown()


async def test_a_chains_astream_is_metered_with_its_real_usage(product: Product, provider: MockProvider) -> None:
    """A chain's astream() reads each chunk in a task of its own: the task that started the run returns while the
    run goes on, and the run is settled by its end, not by that task's."""
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    seen: list[UsageEvent] = []
    meter.on_usage(seen.append)
    chain = RunnableLambda(lambda x: x) | chat(provider)
    text = "".join(
        [
            str(c.content)
            async for c in chain.astream("Hi", config={"callbacks": [MeterCallbackHandler(meter, user_id=user)]})
        ]
    )
    assert text == "Hello!"
    assert meter.flush()
    assert [(e.input_tokens, e.output_tokens) for e in seen] == [(USAGE_IN, USAGE_OUT)]
    meter.shutdown()


async def test_an_async_llm_runs_start_reaches_the_other_handlers_too(product: Product) -> None:
    """LangChain gives an async LLM run's start to inline handlers only when any handler is inline: there this
    handler is not, so a tracer beside it still hears the start."""
    user = product.create_user(PLAN)
    meter = Meter(api_key=product.key, base_url=product.url)
    heard: list[str] = []

    class Spy(AsyncCallbackHandler):
        async def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
            heard.append("start")

        async def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
            heard.append("end")

    await FakeListLLM(responses=["hi"]).ainvoke(
        "x", config={"callbacks": [MeterCallbackHandler(meter, user_id=user), Spy()]}
    )
    assert heard == ["start", "end"]
    assert meter.flush()
    assert meter.stats.sent == 1
    meter.shutdown()


def test_the_langchain_functions_the_handler_recognises_exist() -> None:
    """It tells LangChain's async dispatcher and its async LLM start by their code: a release that renames them
    would turn async runs into blocking ones, silently."""
    from meterline.integrations.langchain import _ASYNC_DISPATCH, _ASYNC_LLM_START

    assert _ASYNC_DISPATCH is not None and _ASYNC_LLM_START is not None


def test_the_handler_refuses_what_it_cannot_meter_with() -> None:
    with pytest.raises(TypeError, match=r"meterline\.Meter or AsyncMeter"):
        MeterCallbackHandler(object())  # type: ignore[arg-type]


def test_a_prompts_candidates_carrying_the_same_usage_count_it_once() -> None:
    """n = 2: langchain-openai puts the whole answer's usage on each choice's message."""

    def gen(inp: int, out: int) -> ChatGeneration:
        usage = {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}
        return ChatGeneration(message=AIMessage(content="x", usage_metadata=usage))

    assert read_result(LLMResult(generations=[[gen(1000, 500), gen(1000, 500)]])) == (1000, 500, [])
    # Candidates with usage of their own, and separate prompts, add up.
    assert read_result(LLMResult(generations=[[gen(1000, 500), gen(0, 300)]])) == (1000, 800, [])
    assert read_result(LLMResult(generations=[[gen(1000, 500)], [gen(1000, 500)]])) == (2000, 1000, [])
