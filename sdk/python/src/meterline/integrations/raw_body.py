"""``with_streaming_response``: the caller reads the provider's body itself (``iter_bytes()``,
``iter_lines()``, ``read()``, ``json()``, ``parse()``), all through the HTTP response's byte stream.
That stream is replaced by one that passes every chunk on untouched and reads it on the way: a JSON
answer is metered with its usage once read to its end, a stream (server-sent events) item by item as
the SDK's own Stream would read it. Closed before its end, the call is settled with what it showed;
never read, with its estimate when closed or collected, or at ``meter.shutdown()``."""

from __future__ import annotations

import codecs
import json
import re
import weakref
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from .calls import Call, Hold

#: How a complete answer is metered (its parsed JSON), or None for a stream.
Done = Callable[[Any], None]


class _Sink:
    """What the bytes show: a complete answer parsed at its end, or a stream's events as they pass. Metering
    never raises into the caller's read."""

    def __init__(
        self,
        call: Call,
        done: Done | None,
        observe: Callable[[Call, Any], bool],
        hold: Hold | None,
        decode: Callable[[bytes], bytes],
    ) -> None:
        self.call = call
        self.decode = decode
        self.done = done
        self.observe = observe
        self.hold = hold
        self.events = EventData() if done is None else None
        self.body: list[bytes] = []
        self.finished = False
        self.broken = False

    def push(self, chunk: bytes) -> None:
        if self.broken:
            return
        try:
            chunk = self.decode(chunk)
            if self.events is None:
                self.body.append(chunk)
                return
            for data in self.events.push(chunk):
                self.observe(self.call, data)
        except Exception:
            # Bytes that do not decompress, an item the observer cannot read: settled with what the rest showed.
            self.broken = True

    def end(self, whole: bool) -> None:
        if self.finished:
            return
        self.finished = True
        if self.events is not None:
            if self.hold is None or not self.hold(self.call):
                (self.call.settle_ended if whole else self.call.settle_seen)()
            return
        body, self.body = b"".join(self.body), []
        if whole and not self.broken and self.done is not None:
            try:
                data = json.loads(body)
            except ValueError:
                data = None
            if data is not None:
                try:
                    self.done(data)
                except Exception:
                    self.call.settle_seen()
                return
        self.call.settle_seen()


class _Stream:
    def __init__(self, inner: Any, sink: _Sink) -> None:
        self.inner = inner
        self.sink = sink

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self.inner:
                self.sink.push(chunk)
                yield chunk
        except BaseException:
            self.sink.end(False)
            raise
        self.sink.end(True)

    def close(self) -> None:
        self.sink.end(False)
        self.inner.close()


class _AsyncStream:
    def __init__(self, inner: Any, sink: _Sink) -> None:
        self.inner = inner
        self.sink = sink

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.inner:
                self.sink.push(chunk)
                yield chunk
        except BaseException:
            self.sink.end(False)
            raise
        self.sink.end(True)

    async def aclose(self) -> None:
        self.sink.end(False)
        await self.inner.aclose()


def meter_raw_body(
    http_response: Any, call: Call, done: Done | None, observe: Callable[[Call, Any], bool], hold: Hold | None
) -> bool:
    """Meters ``http_response``'s body as the caller reads it (``done``: a complete answer's usage; None: a
    stream, each event given to ``observe``). False when it has no byte stream to read."""
    inner = getattr(http_response, "stream", None)
    wrapper = _wrapper_of(type(inner))
    decode = _decoder_of(getattr(http_response, "headers", None))
    if wrapper is None or decode is None:
        return False
    sink = _Sink(call, done, observe, hold, decode)
    http_response.stream = wrapper(inner, sink)
    # A response dropped unread and never closed: its estimate when collected (the sink holds no reference
    # to the response, so this does not keep it alive).
    weakref.finalize(http_response, sink.end, False)
    return True


def _decoder_of(headers: Any) -> Callable[[bytes], bytes] | None:
    """What turns the stream's bytes into the body's: the stream carries them as sent, compressed when the
    response says so (the caller's reads decompress them with a decoder of their own). gzip and deflate, as
    every HTTP client accepts; another encoding (br, zstd, several): None, not metered from the bytes."""
    value = headers.get("content-encoding", "") if headers is not None else ""
    encodings = [e.strip().lower() for e in str(value).split(",") if e.strip().lower() not in ("", "identity")]
    if not encodings:
        return lambda chunk: chunk
    if encodings in (["gzip"], ["x-gzip"]):
        return zlib.decompressobj(zlib.MAX_WBITS | 16).decompress
    if encodings == ["deflate"]:
        # zlib-wrapped, as the standard says (a raw deflate stream fails to decode: the estimate).
        return zlib.decompressobj().decompress
    return None


_wrappers: dict[type, type] = {}


def _wrapper_of(kind: type) -> type | None:
    """The stream to put in place of one of ``kind``: a subclass of its ``SyncByteStream`` or ``AsyncByteStream``
    base, which the response checks its stream against before reading. Found by name, as the provider SDKs
    run on httpx or on a fork of it under another name (openai 3.x: ``httpx2``)."""
    for base in kind.__mro__:
        if base.__name__ in ("SyncByteStream", "AsyncByteStream"):
            wrapper = _wrappers.get(base)
            if wrapper is None:
                reader = _AsyncStream if base.__name__ == "AsyncByteStream" else _Stream
                wrapper = _wrappers[base] = type(reader.__name__, (reader, base), {})
            return wrapper
    return None


_EVENT_END = re.compile(r"\r\n\r\n|\n\n|\r\r")
_LINE = re.compile(r"\r\n|\n|\r")


class EventData:
    """Server-sent events split as the SDKs' decoders split them, however the bytes were cut: a blank line
    ends an event, its ``data:`` lines join with newlines; ``[DONE]`` and other data that is not JSON carry
    nothing."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffered = ""

    def push(self, chunk: bytes) -> list[Any]:
        """The data of the events ``chunk`` completes, parsed."""
        self._buffered += self._decoder.decode(chunk)
        out: list[Any] = []
        while (end := _EVENT_END.search(self._buffered)) is not None:
            event, self._buffered = self._buffered[: end.start()], self._buffered[end.end() :]
            data = _data_of(event)
            if data is not None:
                out.append(data)
        return out


def _data_of(event: str) -> Any:
    lines = [line[5:].removeprefix(" ") for line in _LINE.split(event) if line == "data" or line.startswith("data:")]
    if not lines:
        return None
    data = "\n".join(lines)
    if data == "[DONE]":
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None
