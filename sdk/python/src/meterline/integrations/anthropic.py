"""``meterline.anthropic.wrap(client, meter, user_id=None)``: meters ``Anthropic`` and
``AsyncAnthropic`` messages, plain and streamed, and ``messages.stream()``. Input counts cache
reads and writes, which Anthropic reports apart from ``input_tokens``."""

from __future__ import annotations

from typing import Any, TypeVar

from ..core import MeterCore
from .background import BackgroundRoute
from .calls import Call, count, get, output_limit
from .stainless import Plan, wrap_client

C = TypeVar("C")
_TOOL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


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
    the enclosing ``meter.user(..., session_id=...)``'s, else the library's own."""
    return wrap_client(client, meter, user_id, session_id, _Anthropic(), metadata)


def input_of(usage: Any) -> int:
    return (
        count(get(usage, "input_tokens"))
        + count(get(usage, "cache_read_input_tokens"))
        + count(get(usage, "cache_creation_input_tokens"))
    )


def block_tools(content: Any) -> list[str]:
    return [str(get(b, "name")) for b in content or [] if get(b, "type") in _TOOL_BLOCKS and get(b, "name")]


def read_message(out: Any) -> tuple[int, int, list[str]]:
    u = get(out, "usage")
    return input_of(u), count(get(u, "output_tokens")), block_tools(get(out, "content"))


class _Anthropic:
    provider = "anthropic"
    background: BackgroundRoute | None = None

    def plan(self, options: Any) -> Plan | None:
        if str(getattr(options, "method", "")).lower() != "post" or not str(getattr(options, "url", "")).endswith(
            "/v1/messages"
        ):
            return None
        body = getattr(options, "json_data", None)
        if not isinstance(body, dict):
            return None
        model = body.get("model") if isinstance(body.get("model"), str) else None
        prompt = {"system": body.get("system"), "messages": body.get("messages"), "tools": body.get("tools")}
        limit = output_limit(body.get("max_tokens"))
        return Plan(model, prompt, options, _observer(), read_message, max_output_tokens=limit)


def _observer() -> Any:
    usage: dict[str, int] = {}

    def take(u: Any) -> None:
        # Later fields override earlier ones; output_tokens is cumulative.
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens"):
            v = get(u, k)
            if type(v) is int:
                usage[k] = v

    def observe(call: Call, event: Any) -> bool:
        t = get(event, "type")
        if t == "message_start":
            take(get(get(event, "message"), "usage"))
        elif t == "message_delta":
            take(get(event, "usage"))
        elif t == "content_block_start":
            call.tools.extend(block_tools([get(event, "content_block")]))
            return True
        elif t == "content_block_delta":
            # Text, thinking and a tool call's input all take output tokens (what a stream cut off estimates by).
            d = get(event, "delta")
            for k in ("text", "thinking", "partial_json"):
                v = get(d, k)
                if isinstance(v, str):
                    call.chars += len(v)
                    break
            return True
        else:
            return True
        call.input_tokens = input_of(usage)
        call.output_tokens = usage.get("output_tokens", 0)
        return True

    return observe
