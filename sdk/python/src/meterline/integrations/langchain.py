"""``meterline.langchain.MeterCallbackHandler(meter, user_id=None)``: meters LangChain chat models (and LLMs), in
sync runs and async ones alike. ``raise_error`` makes LangChain wait for the handler before the provider is called
and lets a hard gate stop the run: ``LimitExceededError`` surfaces from ``invoke()``/``stream()`` and
``ainvoke()``/``astream()``."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.callbacks import manager as _manager
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from ..core import MeterCore
from ..errors import MeterTypeError, MeterValueError
from ..validate import check_metadata, check_session_id
from .calls import Call, Starting, astart, count, get, output_limit, start, who


def read_result(response: LLMResult) -> tuple[int, int, list[str]] | None:
    """``usage_metadata`` of each generation's message, else ``llm_output["token_usage"]``; None when neither."""
    inp = out = 0
    tools: list[str] = []
    found = False
    for gens in response.generations:
        # The candidates of one prompt (n > 1) may each carry the whole answer's usage (langchain-openai
        # copies it onto every choice's message): identical copies are one answer's, counted once.
        seen: list[tuple[int, int]] = []
        for g in gens:
            msg = getattr(g, "message", None)
            um = get(msg, "usage_metadata")
            if um is not None:
                found = True
                seen.append((count(get(um, "input_tokens")), count(get(um, "output_tokens"))))
            for tc in get(msg, "tool_calls") or []:
                if get(tc, "name"):
                    tools.append(str(get(tc, "name")))
            content = get(msg, "content")
            if isinstance(content, list):
                tools.extend(
                    str(b["name"])
                    for b in content
                    if isinstance(b, dict) and b.get("type") == "server_tool_use" and b.get("name")
                )
        if len(seen) > 1 and all(u == seen[0] for u in seen):
            seen = seen[:1]
        inp += sum(u[0] for u in seen)
        out += sum(u[1] for u in seen)
    if not found:
        tu = (response.llm_output or {}).get("token_usage") or (response.llm_output or {}).get("usage")
        if tu is None:
            return None
        inp, out = (
            count(get(tu, "prompt_tokens") or get(tu, "input_tokens")),
            count(get(tu, "completion_tokens") or get(tu, "output_tokens")),
        )
    return inp, out, tools


S = TypeVar("S", bound=Callable[..., None])

# LangChain's async dispatcher (langchain_core.callbacks.manager) looks an event up on a handler in this function
# and awaits a coroutine function, in the caller's own task for a handler that runs inline; and an async LLM run's
# start is given by this method, which gives it to the inline handlers only when any handler is inline (the others
# never hear it). Compared by code object; None if a LangChain release renames them (tests/test_langchain.py says so).
_ASYNC_DISPATCH = getattr(getattr(_manager, "_ahandle_event_for_handler", None), "__code__", None)
_ASYNC_LLM_START = getattr(getattr(_manager.AsyncCallbackManager, "on_llm_start", None), "__code__", None)


def _caller(depth: int) -> Any:
    """The code of the function `depth` frames up, comprehensions (their own frames before Python 3.12) skipped."""
    f: Any = sys._getframe(depth + 1)
    while f is not None and f.f_code.co_name.startswith("<"):
        f = f.f_back
    return None if f is None else f.f_code


class _ByDispatcher(Generic[S]):
    """An event looked up by LangChain's async dispatcher is the coroutine ``on_async`` (awaited in the task that
    runs the model: it reserves without blocking the loop and watches that task), by anything else the plain
    ``on_sync``. One handler so meters a model used with ``invoke()`` and ``ainvoke()`` alike: a handler with
    ``async def`` events run by a sync run is driven on a throwaway loop whose exceptions LangChain swallows, so
    a hard gate would not stop the call."""

    def __init__(self, on_sync: S, on_async: Callable[..., Awaitable[None]]) -> None:
        self.on_sync = on_sync
        self.on_async = on_async

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self.on_sync
        fn = (
            self.on_async
            if _ASYNC_DISPATCH is not None and sys._getframe(1).f_code is _ASYNC_DISPATCH
            else self.on_sync
        )
        return fn.__get__(obj, owner)


class MeterCallbackHandler(BaseCallbackHandler):
    """Pass it per call (``config={"callbacks": [handler]}``) or in the model's ``callbacks``; one handler serves
    ``invoke()``/``stream()`` (with a ``Meter``) and ``ainvoke()``/``astream()`` (with a ``Meter`` or an
    ``AsyncMeter``).

    LangChain calls no callback when a reader leaves ``.stream()`` with ``break``: a run that streamed tokens and
    then none for ``idle`` seconds is taken as left and settled with what it streamed (one sweeper thread per
    handler, running only while runs are open). Nor when an ``ainvoke()`` is cancelled (a timeout, a client gone):
    an async run still open when the task that ran it ends is settled then, with its estimate, as a cancelled
    stream is. Runs still open when ``meter.shutdown()`` runs are settled then."""

    raise_error = True

    @property
    def run_inline(self) -> bool:  # type: ignore[override]
        """Async runs: awaited in the caller's task before the provider is called (that task is the one watched).
        Not where LangChain gives an LLM's start to inline handlers only: there the others would never hear it."""
        return _ASYNC_LLM_START is None or _caller(1) is not _ASYNC_LLM_START

    def __init__(
        self,
        meter: MeterCore,
        user_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        idle: float = 60.0,
        *,
        session_id: str | None = None,
    ) -> None:
        if not isinstance(meter, MeterCore):
            raise MeterTypeError("MeterCallbackHandler(meter): meter must be a meterline.Meter or AsyncMeter")
        if not idle > 0:
            raise MeterValueError("MeterCallbackHandler: idle must be a positive number of seconds")
        check_session_id("MeterCallbackHandler", session_id)
        check_metadata(metadata)
        self.meter = meter
        self.user_id = user_id
        self.session_id = session_id
        self.metadata = dict(metadata or {})
        self.idle = float(idle)
        self._runs: dict[UUID, Call] = {}
        # Last token time of runs that streamed (monotonic seconds).
        self._streamed: dict[UUID, float] = {}
        # The done callback of each open async run's task, taken off when the run ends (a long-lived task runs many).
        self._watches: dict[UUID, tuple[asyncio.Task[Any], Callable[[asyncio.Task[Any]], None]]] = {}
        self._sweeper: threading.Thread | None = None
        self._lock = threading.Lock()

    def _sweep(self) -> None:
        while True:
            time.sleep(self.idle / 2)
            now = time.monotonic()
            with self._lock:
                left = [r for r, t in self._streamed.items() if now - t >= self.idle]
                calls = [c for c in (self._runs.pop(r, None) for r in left) if c is not None]
                for r in left:
                    del self._streamed[r]
                    self._unwatch_threadsafe(r)
                if not self._runs:
                    self._sweeper = None
                    done = True
                else:
                    done = False
            for c in calls:
                c.settle_seen()
            if done:
                return

    def _starting(self, prompt: Any, metadata: dict[str, Any] | None, kwargs: dict[str, Any]) -> Starting:
        params = kwargs.get("invocation_params") or {}
        meta = metadata or {}
        model = params.get("model") or params.get("model_name") or meta.get("ls_model_name")
        provider = meta.get("ls_provider") or "langchain"
        tools = params.get("tools")
        return Starting(
            self.meter,
            who(self.user_id, self.session_id),
            model if isinstance(model, str) else None,
            {"messages": prompt, "tools": tools},
            {"provider": provider, **self.metadata},
            # As the chat model sends it: OpenAI's and Anthropic's names, and the other providers'.
            max_output_tokens=output_limit(
                params.get("max_completion_tokens"),
                params.get("max_tokens"),
                params.get("max_output_tokens"),
                params.get("max_new_tokens"),
            ),
        )

    def _opened(self, run_id: UUID, call: Call) -> None:
        with self._lock:
            self._runs[run_id] = call

    async def _astart(self, run_id: UUID, s: Starting) -> None:
        self._opened(run_id, await astart(s))
        task = asyncio.current_task()
        if task is None:
            return

        def ended(done: asyncio.Task[Any]) -> None:
            self._watches.pop(run_id, None)
            # Cancelled or failed with its run open: the call was given up (LangChain tells no handler of a
            # cancelled ainvoke). A task that returned normally may have handed the run on (a chain's astream()
            # reads each chunk in a task of its own): the run stays open for its end.
            if done.cancelled() or done.exception() is not None:
                left = self._ended(run_id)
                if left is not None:
                    left.settle_seen()

        task.add_done_callback(ended)
        self._watches[run_id] = (task, ended)

    def _unwatch_threadsafe(self, run_id: UUID) -> None:
        """Takes an async run's watch off its task from another thread: a task's callbacks belong to its loop."""
        watch = self._watches.pop(run_id, None)
        if watch is not None:
            task, cb = watch
            with contextlib.suppress(RuntimeError):  # its loop closed: nothing to take off
                task.get_loop().call_soon_threadsafe(task.remove_done_callback, cb)

    def _ended(self, run_id: UUID) -> Call | None:
        watch = self._watches.pop(run_id, None)
        if watch is not None:
            watch[0].remove_done_callback(watch[1])
        with self._lock:
            self._streamed.pop(run_id, None)
            return self._runs.pop(run_id, None)

    @staticmethod
    def _messages(messages: list[list[BaseMessage]]) -> list[list[Any]]:
        return [[m.content for m in batch] for batch in messages]

    def _chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._opened(run_id, start(self._starting(self._messages(messages), kwargs.get("metadata"), kwargs)))

    async def _achat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        await self._astart(run_id, self._starting(self._messages(messages), kwargs.get("metadata"), kwargs))

    def _llm_start(self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any) -> None:
        self._opened(run_id, start(self._starting(prompts, kwargs.get("metadata"), kwargs)))

    async def _allm_start(self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any) -> None:
        await self._astart(run_id, self._starting(prompts, kwargs.get("metadata"), kwargs))

    on_chat_model_start = _ByDispatcher(_chat_model_start, _achat_model_start)
    on_llm_start = _ByDispatcher(_llm_start, _allm_start)

    # Cheap and without I/O: plain functions in both kinds of run (an async run calls them inline).
    def on_llm_new_token(self, token: Any, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._runs.get(run_id)
        if call is None:
            return
        if isinstance(token, str):
            call.chars += len(token)
        with self._lock:
            self._streamed[run_id] = time.monotonic()
            if self._sweeper is None:
                self._sweeper = threading.Thread(target=self._sweep, name="meter-langchain-idle", daemon=True)
                self._sweeper.start()

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._ended(run_id)
        if call is None:
            return
        read = read_result(response)
        if read is None:
            call.settle_seen()
        else:
            call.settle(*read)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._ended(run_id)
        if call is None:
            return
        # Nothing streamed: the provider refused; else it was cut after it started answering. A cancelled call
        # (the task cancelled: the caller's abort) may have been worked on: metered with its estimate, as the
        # TypeScript handler meters an abort.
        if call.chars == 0 and not isinstance(error, asyncio.CancelledError):
            call.fail()
        else:
            call.settle_seen()
