"""The metered ``request()`` the OpenAI and Anthropic Python clients share: every endpoint method
(``create``, ``parse``, ``stream()``, ``with_raw_response``) goes through the client instance's
``request``, so replacing it on that one instance meters them all, once, and leaves other clients
in the process untouched."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ..core import MeterCore
from ..errors import MeterTypeError, MeterValueError
from ..meter import Meter
from ..pricing import estimate_tokens
from ..validate import check_metadata, check_session_id
from .background import BackgroundCalls, BackgroundRoute
from .calls import Call, Hold, Starting, ametered_iter, astart, metered_iter, open_calls, start, who
from .raw_body import meter_raw_body

C = TypeVar("C")


@dataclass
class Plan:
    """What one request is: its model, what the model reads, and how to read its answer."""

    model: str | None
    prompt: Any
    options: Any
    observe: Callable[[Call, Any], bool]
    read: Callable[[Any], tuple[int, int, list[str]]]
    extra: dict[str, Any] = field(default_factory=dict)
    # The request's output limit (see output_limit), for the estimate.
    max_output_tokens: int | None = None
    # Keeps a call whose answer is a background response still to run (background.py): set by wrap_client.
    hold: Callable[[Any, Call], bool] | None = None
    # The id of the background response a stream left before its end still runs as, else None.
    running: Callable[[Call], str | None] | None = None
    # Holds a call for that (set by wrap_client).
    hold_cut: Hold | None = None


class Spec(Protocol):
    provider: str
    #: How the provider's background responses are read (None: it has none).
    background: BackgroundRoute | None

    def plan(self, options: Any) -> Plan | None: ...


def _finish(call: Call) -> None:
    call.settle_ended()


def _settle(result: Any, call: Call, plan: Plan, is_async: bool) -> Any:
    # Class lookups: an attribute a pydantic model lacks costs an exception on the instance.
    kind = type(result)
    if hasattr(kind, "__stream__"):
        # A Stream / AsyncStream: metered as its items pass, settled when it ends or is left.
        it = result._iterator
        result._iterator = (ametered_iter if is_async else metered_iter)(it, call, plan.observe, _finish, plan.hold_cut)
        # Closing a stream the reader left (break, then close() or `with`) settles it with what it showed.
        close = result.close

        def left() -> None:
            if plan.hold_cut is None or not plan.hold_cut(call):
                call.settle_seen()

        if is_async:

            async def aclose() -> None:
                left()
                await close()

            result.close = aclose
        else:

            def sclose() -> None:
                left()
                close()

            result.close = sclose
        return result
    if _is_raw(kind):
        if not reads_body(plan.options) and not inspect.iscoroutinefunction(result.parse):
            # with_raw_response: parse() is cached (the caller gets the same object) and reads nothing
            # more than the caller would: a stream's is the Stream, metered as the caller reads it.
            try:
                parsed = result.parse()
            except Exception:
                call.settle_seen()
                return result
            return _settle_parsed(result, parsed, call, plan, is_async)
        # A body the caller reads itself (with_streaming_response): metered from the bytes as the caller
        # reads them (raw_body.py); where they cannot be reached, settled with the estimate.
        if not _meter_body(result, call, plan):
            _settle_estimate(call, plan)
        return result
    if plan.hold is None or not plan.hold(result, call):
        call.settle(*plan.read(result))
    return result


async def _asettle(result: Any, call: Call, plan: Plan) -> Any:
    """_settle for the async client, whose raw responses parse by a coroutine."""
    if _is_raw(type(result)) and not reads_body(plan.options) and inspect.iscoroutinefunction(result.parse):
        try:
            parsed = await result.parse()
        except Exception:
            call.settle_seen()
            return result
        return _settle_parsed(result, parsed, call, plan, True)
    return _settle(result, call, plan, True)


def _is_raw(kind: type) -> bool:
    # A raw response (with_raw_response, with_streaming_response): a status and a parse().
    return hasattr(kind, "status_code") and hasattr(kind, "parse")


def _settle_parsed(result: Any, parsed: Any, call: Call, plan: Plan, is_async: bool) -> Any:
    if hasattr(type(parsed), "__stream__"):
        _settle(parsed, call, plan, is_async)
    else:
        try:
            if plan.hold is None or not plan.hold(parsed, call):
                call.settle(*plan.read(parsed))
        except Exception:
            call.settle_seen()
    return result


def _read_back(background: BackgroundCalls, options: Any, result: Any, is_async: bool) -> Any:
    """A request not metered itself, which may read a background response held (background.py); a raw
    answer (with_raw_response) is read through its parse(), which is cached: the caller gets the same object."""
    if _is_raw(type(result)) and not reads_body(options) and not inspect.iscoroutinefunction(result.parse):
        background.read(options, result.parse(), is_async)
        return result
    return background.read(options, result, is_async)


async def _aread_back(background: BackgroundCalls, options: Any, result: Any) -> Any:
    """_read_back for the async client, whose raw answers parse by a coroutine."""
    if _is_raw(type(result)) and not reads_body(options) and inspect.iscoroutinefunction(result.parse):
        background.read(options, await result.parse(), True)
        return result
    return _read_back(background, options, result, True)


def _meter_body(result: Any, call: Call, plan: Plan) -> bool:
    http_response = getattr(result, "http_response", None)
    body = getattr(plan.options, "json_data", None)
    if isinstance(body, Mapping) and body.get("stream"):
        return meter_raw_body(http_response, call, None, plan.observe, plan.hold_cut)
    # A complete answer read whole: settled as a parsed raw answer is (its JSON is no stream).
    return meter_raw_body(
        http_response, call, lambda data: _settle_parsed(result, data, call, plan, False), plan.observe, None
    )


def _settle_estimate(call: Call, plan: Plan) -> None:
    call.input_tokens = estimate_tokens(plan.prompt)
    call.settle_seen()


#: The header the provider SDKs (Stainless) mark raw responses with: "stream" for with_streaming_response
#: (a body the caller reads), another value ("true", "raw") for with_raw_response (whose parse() gives
#: what the call would have).
RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"


def reads_body(options: Any) -> bool:
    """Whether the caller reads the answer's body itself (with_streaming_response)."""
    headers = getattr(options, "headers", None)
    return isinstance(headers, Mapping) and headers.get(RAW_RESPONSE_HEADER) == "stream"


@contextlib.contextmanager
def answered(call: Call) -> Iterator[None]:
    """The provider's answer: an error gives the estimate back (nothing recorded); a cancel before the answer
    settles with the estimate, as the provider may be working on it already."""
    try:
        yield
    except Exception:
        call.fail()
        raise
    except BaseException:
        call.settle_seen()
        raise


def wrap_client(
    client: C,
    meter: MeterCore,
    user_id: str | None,
    session_id: str | None,
    spec: Spec,
    metadata: dict[str, Any] | None,
) -> C:
    if not isinstance(meter, MeterCore):
        raise MeterTypeError("wrap(client, meter): meter must be a meterline.Meter or AsyncMeter")
    if getattr(client, "_meter_wrapped", False):
        raise MeterValueError("this client is metered already: wrap each client once")
    check_session_id("wrap()", session_id)
    check_metadata(metadata)
    original = client.request  # type: ignore[attr-defined]
    meta = {"provider": spec.provider, **(metadata or {})}
    calls = open_calls(meter)
    background = BackgroundCalls(spec.background) if spec.background is not None else None

    def planned(options: Any) -> Plan | None:
        plan = spec.plan(options)
        if plan is not None and background is not None:
            plan.hold = background.hold_pending
            running = plan.running
            if running is not None:
                plan.hold_cut = lambda call: background.hold_cut(running(call), call)
        return plan

    def starting(plan: Plan) -> Starting:
        return Starting(meter, who(user_id, session_id), plan.model, plan.prompt, meta, calls, plan.max_output_tokens)

    async def arequest(cast_to: Any, options: Any, *args: Any, **kwargs: Any) -> Any:
        plan = planned(options)
        if plan is None:
            result = await original(cast_to, options, *args, **kwargs)
            return await _aread_back(background, options, result) if background is not None else result
        call = await astart(starting(plan))
        with answered(call):
            result = await original(cast_to, plan.options, *args, **kwargs)
        return await _asettle(result, call, plan)

    def request(cast_to: Any, options: Any, *args: Any, **kwargs: Any) -> Any:
        plan = planned(options)
        if plan is None:
            result = original(cast_to, options, *args, **kwargs)
            return _read_back(background, options, result, False) if background is not None else result
        call = start(starting(plan))
        with answered(call):
            result = original(cast_to, plan.options, *args, **kwargs)
        return _settle(result, call, plan, False)

    if not inspect.iscoroutinefunction(original) and not isinstance(meter, Meter):
        raise MeterTypeError(
            "wrap(client, meter): a blocking client needs a meterline.Meter (AsyncMeter meters async ones)"
        )
    client.request = arequest if inspect.iscoroutinefunction(original) else request  # type: ignore[attr-defined]
    client._meter_wrapped = True  # type: ignore[attr-defined]
    return client


def with_body(options: Any, body: dict[str, Any]) -> Any:
    """A copy of the request options with another JSON body (the caller's options stay as they were)."""
    copy = getattr(options, "model_copy", None)
    if copy is not None:
        return copy(update={"json_data": body})
    return options.copy(update={"json_data": body})
