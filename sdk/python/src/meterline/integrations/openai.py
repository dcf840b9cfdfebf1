"""``meterline.openai.wrap(client, meter, user_id=None)``: meters ``OpenAI`` and ``AsyncOpenAI``
chat completions and the Responses API (plain, streamed, raw, and the SDK's helpers on them)."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from ..core import MeterCore
from .background import BackgroundRoute, Final
from .calls import Call, count, get, output_limit
from .stainless import Plan, reads_body, with_body, wrap_client

C = TypeVar("C")


def wrap(
    client: C,
    meter: MeterCore,
    user_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    *,
    session_id: str | None = None,
) -> C:
    """Meters this client instance (returned as is) with a Meter, or for the async client a Meter or an
    AsyncMeter. The user: ``user_id``, else ``with meter.user(...)``; every call's session: ``session_id``, else
    the enclosing ``meter.user(..., session_id=...)``'s, else the library's own. A response created with
    ``background=True`` is settled when this client reads it final (``responses.retrieve()``, plain or
    streamed, or ``responses.cancel()``), with the usage it then reports."""
    return wrap_client(client, meter, user_id, session_id, _OpenAI(), metadata)


def chat_tools(choices: Any) -> list[str]:
    names: list[str] = []
    for ch in choices or []:
        for tc in get(get(ch, "message"), "tool_calls") or []:
            name = get(get(tc, "function"), "name") or get(get(tc, "custom"), "name")
            if name:
                names.append(str(name))
    return names


def response_tools(output: Any) -> list[str]:
    names: list[str] = []
    for item in output or []:
        t = get(item, "type")
        if t in ("function_call", "custom_tool_call", "mcp_call"):
            if get(item, "name"):
                names.append(str(get(item, "name")))
        elif isinstance(t, str) and t.endswith("_call"):
            names.append(t[: -len("_call")])
    return names


def read_chat(out: Any) -> tuple[int, int, list[str]]:
    u = get(out, "usage")
    return count(get(u, "prompt_tokens")), count(get(u, "completion_tokens")), chat_tools(get(out, "choices"))


def read_response(out: Any) -> tuple[int, int, list[str]]:
    u = get(out, "usage")
    return count(get(u, "input_tokens")), count(get(u, "output_tokens")), response_tools(get(out, "output"))


#: A response's states that end it: its usage is all there will be.
_FINAL = frozenset({"completed", "incomplete", "failed", "cancelled"})
_TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_READ = re.compile(r"/responses/([^/]+)$")
_CANCEL = re.compile(r"/responses/([^/]+)/cancel$")


class _Background:
    """OpenAI's background responses (background.py)."""

    def pending(self, result: Any) -> str | None:
        rid = get(result, "id")
        if get(result, "background") is True and isinstance(rid, str) and get(result, "status") not in _FINAL:
            return rid
        return None

    def read_of(self, options: Any) -> str | None:
        method = str(getattr(options, "method", "")).lower()
        url = str(getattr(options, "url", "")).split("?")[0]
        m = _READ if method == "get" else _CANCEL if method == "post" else None
        found = m.search(url) if m is not None else None
        return found.group(1) if found else None

    def final(self, response: Any) -> Final | None:
        status = get(response, "status")
        if status not in _FINAL:
            return None
        if get(response, "usage") is not None:
            return read_response(response)
        return "nothing" if status in ("failed", "cancelled") else "estimate"

    def final_of(self, event: Any) -> Any:
        return get(event, "response") if get(event, "type") in _TERMINAL_EVENTS else None


class _OpenAI:
    provider = "openai"
    background: BackgroundRoute | None = _Background()

    def plan(self, options: Any) -> Plan | None:
        if str(getattr(options, "method", "")).lower() != "post":
            return None
        url = str(getattr(options, "url", ""))
        body = getattr(options, "json_data", None)
        if not isinstance(body, dict):
            return None
        model = body.get("model") if isinstance(body.get("model"), str) else None
        if url.endswith("/chat/completions"):
            prompt = {"messages": body.get("messages"), "tools": body.get("tools")}
            hide = False
            asked = (body.get("stream_options") or {}).get("include_usage")
            # A body the caller reads itself (with_streaming_response) is settled with the estimate: sent
            # as asked, since nothing could hide a usage chunk from that caller.
            if body.get("stream") and not asked and not reads_body(options):
                # Without it a stream carries no usage: ask for it, and hide its chunk from this caller.
                hide = True
                options = with_body(
                    options, {**body, "stream_options": {**(body.get("stream_options") or {}), "include_usage": True}}
                )
            # max_tokens is the older name of max_completion_tokens (deprecated, still accepted).
            limit = output_limit(body.get("max_completion_tokens"), body.get("max_tokens"))
            return Plan(model, prompt, options, _chat_observer(hide), read_chat, max_output_tokens=limit)
        if url.endswith("/responses"):
            prompt = {"instructions": body.get("instructions"), "input": body.get("input"), "tools": body.get("tools")}
            limit = output_limit(body.get("max_output_tokens"))
            # A background response streamed and left before its end runs on: held until read final.
            background = body.get("background") is True
            return Plan(
                model,
                prompt,
                options,
                _response_observer(),
                read_response,
                max_output_tokens=limit,
                running=(lambda call: call.response_id) if background else None,
            )
        return None


def _chat_observer(hide: bool) -> Any:
    def observe(call: Call, chunk: Any) -> bool:
        usage = get(chunk, "usage")
        choices = get(chunk, "choices") or []
        if usage is not None:
            call.input_tokens = count(get(usage, "prompt_tokens"))
            call.output_tokens = count(get(usage, "completion_tokens"))
        for ch in choices:
            delta = get(ch, "delta")
            content = get(delta, "content")
            if isinstance(content, str):
                call.chars += len(content)
            for tc in get(delta, "tool_calls") or []:
                # A call streamed in pieces counts at its first piece, the one with its name.
                name = get(get(tc, "function"), "name") or get(get(tc, "custom"), "name")
                if name:
                    call.tools.append(str(name))
        return not (hide and usage is not None and not choices)

    return observe


def _response_observer() -> Any:
    def observe(call: Call, event: Any) -> bool:
        t = get(event, "type")
        if t == "response.created" and isinstance(get(get(event, "response"), "id"), str):
            call.response_id = get(get(event, "response"), "id")
        elif t in ("response.output_text.delta", "response.function_call_arguments.delta"):
            d = get(event, "delta")
            if isinstance(d, str):
                call.chars += len(d)
        elif t == "response.output_item.added":
            call.tools.extend(response_tools([get(event, "item")]))
        elif t in ("response.completed", "response.incomplete", "response.failed"):
            # Ended: nothing runs on, whether or not the event says what it used.
            call.response_id = None
            resp = get(event, "response")
            u = get(resp, "usage")
            if u is not None:
                call.input_tokens = count(get(u, "input_tokens"))
                call.output_tokens = count(get(u, "output_tokens"))
            final = response_tools(get(resp, "output"))
            if final:
                call.tools = final
        return True

    return observe
