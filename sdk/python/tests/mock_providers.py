"""A local server speaking the OpenAI (chat completions, Responses) and Anthropic (messages) wire
formats, JSON and SSE, with fixed usage; it counts every request it gets. A response created with
``background: true`` answers ``queued`` without usage under an id of its own; read back (GET, plain or
``?stream=true``) it is completed with the fixed usage, or still ``in_progress`` while ``running`` is set;
a cancel answers it ``cancelled``, without usage."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
import time
from typing import Any

from .support import serve

USAGE_IN, USAGE_OUT = 12, 30
CACHE_READ, CACHE_WRITE = 100, 8


class MockProvider:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        # Cleared: requests are counted and then wait for it to be set before they are answered.
        self.answering = threading.Event()
        self.answering.set()
        # Background responses read back are still running.
        self.running = False
        # Bodies go out gzip-compressed (Content-Encoding: gzip) to a client that accepts it, as providers'
        # fronts send them.
        self.gzip = False
        self.background: dict[str, dict[str, Any]] = {}
        mock = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as separate writes: without this, delayed ACKs add 40 ms a call.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                path = self.path.split("?")[0]
                mock.requests.append((path, body))
                mock.answering.wait(60)
                if path.endswith("/chat/completions"):
                    self._answer(body, chat_json, chat_sse)
                elif path.endswith("/responses") and body.get("background") and not body.get("stream"):
                    rid = f"resp_bg_{len(mock.background) + 1}"
                    mock.background[rid] = body
                    self._send(json.dumps(_background(body, rid, "queued")).encode(), "application/json")
                elif path.endswith("/cancel") and path.split("/")[-2] in mock.background:
                    rid = path.split("/")[-2]
                    self._send(
                        json.dumps(_background(mock.background[rid], rid, "cancelled")).encode(), "application/json"
                    )
                elif path.endswith("/responses") and body.get("background"):
                    # A background stream: the response goes on, and can be read back, if the stream is left.
                    rid = f"resp_bg_{len(mock.background) + 1}"
                    mock.background[rid] = body
                    self._answer({**body, "id": rid}, responses_json, responses_sse)
                elif path.endswith("/responses"):
                    self._answer(body, responses_json, responses_sse)
                elif path.endswith("/messages"):
                    self._answer(body, messages_json, messages_sse)
                else:
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()

            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                mock.requests.append((path, {}))
                rid = path.split("/")[-1]
                body = mock.background.get(rid)
                if body is None:
                    self._send(b"{}", "application/json", 404)
                elif "stream=true" in query:
                    self._send("".join(responses_sse({**body, "id": rid})).encode(), "text/event-stream")
                elif mock.running:
                    self._send(json.dumps(_background(body, rid, "in_progress")).encode(), "application/json")
                else:
                    self._send(
                        json.dumps({**_response(body), "id": rid, "background": True}).encode(), "application/json"
                    )

            def _answer(self, body: dict[str, Any], as_json: Any, as_sse: Any) -> None:
                if body.get("stream"):
                    self._send("".join(as_sse(body)).encode(), "text/event-stream")
                else:
                    self._send(json.dumps(as_json(body)).encode(), "application/json")

            def _send(self, data: bytes, ctype: str, status: int = 200) -> None:
                self.send_response(status)
                if mock.gzip and "gzip" in (self.headers.get("accept-encoding") or ""):
                    data = gzip.compress(data)
                    self.send_header("content-encoding", "gzip")
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        serve(self.server)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def count(self, suffix: str) -> int:
        return sum(1 for p, _ in self.requests if p.endswith(suffix))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Server(http.server.ThreadingHTTPServer):
    # Tests open tens of connections at once: the default backlog of 5 would refuse some of them.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that leaves a stream resets its connection: not a failure of the mock


def _sse(data: Any, event: str | None = None) -> str:
    return (f"event: {event}\n" if event else "") + f"data: {json.dumps(data)}\n\n"


def chat_json(body: dict[str, Any]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": "Hello!"}
    if body.get("tools"):
        msg["tool_calls"] = [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [{"index": 0, "message": msg, "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT, "total_tokens": USAGE_IN + USAGE_OUT},
    }


def chat_sse(body: dict[str, Any]) -> list[str]:
    with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model"),
    }
    out = []
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": "Hel"}, {"content": "lo!"}]
    # More text asked by the test (extra_body={"mock_text": ...}), with the same usage reported.
    if body.get("mock_text"):
        deltas.append({"content": body["mock_text"]})
    if body.get("tools"):
        deltas.append(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        )
        deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})
    for i, d in enumerate(deltas):
        chunk = {
            **base,
            "choices": [{"index": 0, "delta": d, "finish_reason": "stop" if i == len(deltas) - 1 else None}],
        }
        if with_usage:
            chunk["usage"] = None
        out.append(_sse(chunk))
    if with_usage:
        out.append(
            _sse(
                {
                    **base,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": USAGE_IN,
                        "completion_tokens": USAGE_OUT,
                        "total_tokens": USAGE_IN + USAGE_OUT,
                    },
                }
            )
        )
    out.append("data: [DONE]\n\n")
    return out


def _response(body: dict[str, Any]) -> dict[str, Any]:
    output: list[dict[str, Any]] = [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Hello!", "annotations": []}],
        }
    ]
    if body.get("tools"):
        output.append(
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": "{}",
                "status": "completed",
            }
        )
        output.append({"type": "web_search_call", "id": "ws_1", "status": "completed"})
    return {
        "id": body.get("id", "resp_1"),
        "object": "response",
        "created_at": int(time.time()),
        "model": body.get("model"),
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": USAGE_IN,
            "output_tokens": USAGE_OUT,
            "total_tokens": USAGE_IN + USAGE_OUT,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _background(body: dict[str, Any], rid: str, status: str) -> dict[str, Any]:
    """A background response not run (queued, in progress) or cancelled: no output, no usage."""
    return {**_response(body), "id": rid, "background": True, "status": status, "output": [], "usage": None}


def responses_json(body: dict[str, Any]) -> dict[str, Any]:
    return _response(body)


def responses_sse(body: dict[str, Any]) -> list[str]:
    r = _response(body)
    created = {**r, "status": "in_progress", "output": [], "usage": None}
    return [
        _sse({"type": "response.created", "response": created, "sequence_number": 0}, "response.created"),
        _sse(
            {
                "type": "response.output_text.delta",
                "delta": "Hel",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "sequence_number": 1,
                "logprobs": [],
            },
            "response.output_text.delta",
        ),
        _sse(
            {
                "type": "response.output_text.delta",
                "delta": "lo!",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "sequence_number": 2,
                "logprobs": [],
            },
            "response.output_text.delta",
        ),
        _sse({"type": "response.completed", "response": r, "sequence_number": 3}, "response.completed"),
    ]


def _message(body: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": "Hello!"}]
    if body.get("tools"):
        content.append({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}})
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": USAGE_IN,
            "output_tokens": USAGE_OUT,
            "cache_read_input_tokens": CACHE_READ,
            "cache_creation_input_tokens": CACHE_WRITE,
        },
    }


def messages_json(body: dict[str, Any]) -> dict[str, Any]:
    return _message(body)


def messages_sse(body: dict[str, Any]) -> list[str]:
    m = _message(body)
    start = {**m, "content": [], "stop_reason": None, "usage": {**m["usage"], "output_tokens": 1}}
    ev = [
        _sse({"type": "message_start", "message": start}, "message_start"),
        _sse(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            "content_block_start",
        ),
        _sse(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
            "content_block_delta",
        ),
        _sse(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo!"}},
            "content_block_delta",
        ),
        _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
    ]
    if body.get("tools"):
        ev += [
            _sse(
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
                },
                "content_block_start",
            ),
            _sse(
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": "{}"},
                },
                "content_block_delta",
            ),
            _sse({"type": "content_block_stop", "index": 1}, "content_block_stop"),
        ]
    ev += [
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": USAGE_OUT},
            },
            "message_delta",
        ),
        _sse({"type": "message_stop"}, "message_stop"),
    ]
    return ev
