"""The delivery benchmark (``bench/bench_live.py``): its sockets read what a server sends however
the reads split it, and at a tiny size every delivery is counted, none twice."""

from __future__ import annotations

import uuid
from dataclasses import replace

from bench.live_case import run_case
from bench.live_world import Case, world_of
from bench.ws_client import BINARY, CLOSE, CONTINUATION, PING, TEXT, FrameReader, client_frame, mask_payload
from gateway.settings import Settings


def server_frame(opcode: int, payload: bytes, *, final: bool = True) -> bytes:
    """A frame as a server sends it: unmasked."""
    first = (0x80 if final else 0) | opcode
    size = len(payload)
    if size < 126:
        return bytes((first, size)) + payload
    if size < 1 << 16:
        return bytes((first, 126)) + size.to_bytes(2, "big") + payload
    return bytes((first, 127)) + size.to_bytes(8, "big") + payload


def test_frames_split_anywhere_come_out_whole() -> None:
    small = b'{"type":"next","payload":{"content":"seq=7;"}}'
    medium = b"m" * 300  # 16-bit length
    large = b"L" * 70_000  # 64-bit length
    stream = (
        server_frame(TEXT, small)
        + server_frame(TEXT, medium)
        + server_frame(PING, b"hi")
        + server_frame(BINARY, large)
        + server_frame(TEXT, b"")
    )
    expected = [(TEXT, small), (TEXT, medium), (PING, b"hi"), (BINARY, large), (TEXT, b"")]
    for step in (1, 2, 3, 7, 125, 4096, len(stream)):
        reader = FrameReader()
        messages = []
        for start in range(0, len(stream), step):
            messages.extend(reader.feed(stream[start : start + step]))
        assert messages == expected, step


def test_fragments_are_joined_around_a_control_frame() -> None:
    stream = (
        server_frame(TEXT, b"seq=", final=False)
        + server_frame(PING, b"")
        + server_frame(CONTINUATION, b"12", final=False)
        + server_frame(CONTINUATION, b";")
    )
    reader = FrameReader()
    messages = [m for byte in range(len(stream)) for m in reader.feed(stream[byte : byte + 1])]
    assert messages == [(PING, b""), (TEXT, b"seq=12;")]


def test_client_frames_are_masked_and_read_back() -> None:
    for payload in (b"", b"x" * 5, b"y" * 200, b"z" * 70_000):
        frame = client_frame(TEXT, payload, mask=b"\x01\x02\x03\x04")
        assert frame[1] & 0x80  # the mask bit
        if payload:
            assert payload not in frame
        assert FrameReader().feed(frame) == [(TEXT, payload)]
    assert mask_payload(mask_payload(b"hello", b"abcd"), b"abcd") == b"hello"
    close = client_frame(CLOSE, (1000).to_bytes(2, "big"))
    assert FrameReader().feed(close) == [(CLOSE, b"\x03\xe8")]


async def test_every_delivery_is_counted() -> None:
    """The quick mode's path at a tiny size, on one gateway process of its own: five sockets in
    a room and three messages are fifteen deliveries; two pairs and three messages, three."""
    settings = replace(Settings.from_env(), keyspace=f"test_live_{uuid.uuid4().hex[:10]}")
    async with world_of(settings, [5], pairs=2) as world:
        room = await run_case(world, Case("room", 5, 10.0, 1), duration=0.3, grace=30)
        pairs = await run_case(world, Case("pairs", 2, 10.0, 1), duration=0.3, grace=30)

    assert (room.sent, room.failed_sends) == (3, 0)
    assert room.expected == room.received == 15
    assert room.duplicates == 0
    assert len(room.latencies_ms) == 15
    assert room.counted_deliveries == 2 * 5  # the rounds the statements are counted over
    assert (pairs.sent, pairs.failed_sends) == (3, 0)
    assert pairs.expected == pairs.received == 3
    assert pairs.duplicates == 0
    assert pairs.counted_deliveries == 2 * 2
