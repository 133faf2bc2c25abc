"""WebSocket frames by hand (RFC 6455): a client's, with any opcode, flag, mask or length, and
the server's, read back from the raw bytes."""

from __future__ import annotations

import random
import struct

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA

HANDSHAKE = (
    "GET /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Protocol: {protocol}\r\n\r\n"
)


def frame(
    opcode: int,
    payload: bytes,
    *,
    fin: bool = True,
    rsv: int = 0,
    mask: bytes | None = b"\x01\x02\x03\x04",
    length: int | None = None,
    width: int | None = None,
) -> bytes:
    """One frame. ``length`` overrides the length the header declares (a lie), ``width`` the
    length's encoding (7, 16 or 64 bits, whatever the length); ``mask=None`` sends it unmasked,
    which a client may not."""
    declared = len(payload) if length is None else length
    first = (0x80 if fin else 0) | (rsv & 0x7) << 4 | (opcode & 0xF)
    masked = 0x80 if mask is not None else 0
    if width is None:
        width = 7 if declared < 126 else 16 if declared < 65536 else 64
    if width == 7:
        header = struct.pack("!BB", first, masked | (declared & 0x7F))
    elif width == 16:
        header = struct.pack("!BBH", first, masked | 126, declared & 0xFFFF)
    else:
        header = struct.pack("!BBQ", first, masked | 127, declared & 0xFFFFFFFFFFFFFFFF)
    if mask is None:
        return header + payload
    body = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
    return header + mask + body


def server_frames(data: bytes) -> list[tuple[int, bytes]]:
    """The (opcode, payload) of each whole frame the server sent (server frames are unmasked)."""
    frames = []
    while len(data) >= 2:
        opcode, size, at = data[0] & 0x0F, data[1] & 0x7F, 2
        if size == 126:
            if len(data) < 4:
                break
            size, at = struct.unpack("!H", data[2:4])[0], 4
        elif size == 127:
            if len(data) < 10:
                break
            size, at = struct.unpack("!Q", data[2:10])[0], 10
        if data[1] & 0x80:
            at += 4
        if len(data) < at + size:
            break
        frames.append((opcode, data[at : at + size]))
        data = data[at + size :]
    return frames


def close_code(payload: bytes) -> int | None:
    return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None


def odd_frames(rng: random.Random, valid: bytes) -> tuple[list[bytes], str]:
    """A sequence of frames a client should not send, built around ``valid`` (a protocol
    message's bytes), and what is odd about it."""
    payload = valid if rng.random() < 0.5 else rng.randbytes(rng.randint(0, 300))
    kind = rng.choice(
        (
            "reserved opcode",
            "rsv bits",
            "unmasked",
            "length lies long",
            "length lies short",
            "huge length",
            "wide encoding",
            "fragments",
            "lone continuation",
            "control frame fragmented",
            "control frame too long",
            "close with odd code",
            "close with one byte",
            "text that is not utf-8",
            "ping flood",
        )
    )
    if kind == "reserved opcode":
        frames = [frame(rng.choice((3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF)), payload)]
    elif kind == "rsv bits":
        frames = [frame(TEXT, payload, rsv=rng.randint(1, 7))]
    elif kind == "unmasked":
        frames = [frame(TEXT, payload, mask=None)]
    elif kind == "length lies long":
        frames = [frame(TEXT, payload, length=len(payload) + rng.randint(1, 100_000))]
    elif kind == "length lies short":
        frames = [frame(TEXT, payload, length=max(0, len(payload) - rng.randint(1, 20)))]
    elif kind == "huge length":
        frames = [
            frame(rng.choice((TEXT, BINARY)), payload, length=rng.choice((2**31, 2**63 - 1, 2**64 - 1)))
        ]
    elif kind == "wide encoding":
        frames = [frame(TEXT, payload, width=rng.choice((16, 64)))]
    elif kind == "fragments":
        cut = rng.randint(0, len(payload))
        middle = [frame(PING, b"p")] if rng.random() < 0.5 else []
        frames = [frame(TEXT, payload[:cut], fin=False), *middle, frame(CONTINUATION, payload[cut:])]
        if rng.random() < 0.3:
            frames.append(frame(CONTINUATION, b"after the end"))
    elif kind == "lone continuation":
        frames = [frame(CONTINUATION, payload, fin=rng.random() < 0.5)]
    elif kind == "control frame fragmented":
        frames = [frame(rng.choice((PING, PONG, CLOSE)), payload[:50], fin=False)]
    elif kind == "control frame too long":
        frames = [frame(rng.choice((PING, PONG, CLOSE)), b"x" * rng.randint(126, 70_000))]
    elif kind == "close with odd code":
        code = rng.choice((0, 999, 1004, 1005, 1006, 1015, 2999, 4999, 5000, 65535))
        frames = [frame(CLOSE, struct.pack("!H", code) + rng.choice((b"", b"\xff\xfe", b"bye")))]
    elif kind == "close with one byte":
        frames = [frame(CLOSE, b"\x03")]
    elif kind == "text that is not utf-8":
        frames = [frame(TEXT, rng.choice((b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b'{"type":"\xff"}')))]
    else:
        frames = [frame(PING, rng.randbytes(rng.randint(0, 125))) for _ in range(rng.randint(10, 200))]
    return frames, kind
