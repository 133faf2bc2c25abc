"""One frame per event for the sockets whose operations share an id, and each socket's
own id in its frame: a frame made for one operation id is never written under another."""

from __future__ import annotations

import json
from typing import Any

from gateway.http.live import SocketSink


class _Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def write(self, data: bytes) -> None:
        self.written.append(data)


def _sink(operation_id: str) -> tuple[SocketSink, _Transport]:
    transport = _Transport()
    sink = SocketSink(transport, "graphql-transport-ws", operation_id, limit=1 << 20, cut=lambda c, r: None)  # type: ignore[arg-type]
    return sink, transport


def _message(frame: bytes) -> Any:
    assert frame[0] == 0x81 and frame[1] < 126  # one unmasked text frame, short length
    return json.loads(frame[2:])


def test_sockets_sharing_an_operation_id_share_one_frame_and_others_get_their_own() -> None:
    payload = b'{"data":{"roomMessages":{"id":"m1"}}}'
    made: dict[bytes, bytes] = {}
    (first, t1), (second, t2), (other, t3) = _sink("1"), _sink("1"), _sink("7")
    assert first.deliver(payload, made) and second.deliver(payload, made) and other.deliver(payload, made)
    assert t1.written[0] is t2.written[0]
    assert _message(t1.written[0]) == {
        "id": "1",
        "type": "next",
        "payload": {"data": {"roomMessages": {"id": "m1"}}},
    }
    assert _message(t3.written[0])["id"] == "7"
    assert t3.written[0] is not t1.written[0]
    # Without the shared dictionary (a single sink's own result) the same frame is written.
    alone, t4 = _sink("1")
    assert alone.deliver(payload) and t4.written == [t1.written[0]]
