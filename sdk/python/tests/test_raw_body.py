"""The pure reading of a raw body's server-sent events (integrations/raw_body.py)."""

from __future__ import annotations

import pytest

from meterline.integrations.raw_body import EventData

WIRE = (
    'data: {"a":1}\n\n'
    ": keep-alive comment\n\n"
    'event: message_delta\r\ndata: {"b":\r\ndata: 2}\r\n\r\n'
    'data:{"c":"é"}\r\r'
    "event: ping\n\n"
    "data: not json\n\n"
    "data: [DONE]\n\n"
    'data: {"unfinished":true}'
).encode()


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(WIRE)])
def test_the_same_data_however_the_bytes_are_cut(size: int) -> None:
    events = EventData()
    out = []
    for i in range(0, len(WIRE), size):
        out.extend(events.push(WIRE[i : i + size]))
    assert out == [{"a": 1}, {"b": 2}, {"c": "é"}]
