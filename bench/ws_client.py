"""The delivery benchmark's subscriber sockets: a lean ``graphql-transport-ws`` client.

A thousand sockets receiving fifty messages a second each are fifty thousand frames a
second into the load generator, on a machine whose cores it shares with the gateway under
test. A general-purpose client (aiohttp's WebSocket: a reader task, a message object and a
JSON parse per frame) would measure itself. Here each socket is one ``asyncio.Protocol``
that does the HTTP upgrade, sends its ``connection_init`` and ``subscribe`` as masked client
frames (RFC 6455 section 5.3), answers pings, and of every server frame reads only what it
needs: where a ``seq=<n>;`` mark is in the payload's bytes (the benchmark's message content
carries it), recorded with the time of the read that brought it. Anything without a mark is
rare (the acknowledgement, a protocol ping, an error or a completion) and parsed as JSON.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from array import array
from typing import Any, cast

import orjson

TRANSPORT_WS = "graphql-transport-ws"

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA

#: What a benchmark message's content carries: ``seq=<n>;`` for a measured message,
#: ``probe=<n>;`` for the messages that prove every subscription is live before a case.
SEQ_MARK = b"seq="
PROBE_MARK = b"probe="
MARK_END = b";"


def mask_payload(payload: bytes, mask: bytes) -> bytes:
    """``payload`` XOR the 4-byte ``mask`` repeated (masking and unmasking are the same)."""
    if not payload:
        return b""
    size = len(payload)
    key = (mask * (size // 4 + 1))[:size]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(size, "big")


def client_frame(opcode: int, payload: bytes, mask: bytes | None = None) -> bytes:
    """One final frame as a client sends it: masked, with a random key unless one is given."""
    key = os.urandom(4) if mask is None else mask
    size = len(payload)
    if size < 126:
        head = bytes((0x80 | opcode, 0x80 | size))
    elif size < 1 << 16:
        head = bytes((0x80 | opcode, 0x80 | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 0x80 | 127)) + size.to_bytes(8, "big")
    return head + key + mask_payload(payload, key)


class FrameReader:
    """Messages out of a stream of server frames, however the reads split it.

    Server frames are unmasked (a masked one is unmasked all the same); lengths come in 7,
    16 (126) or 64 (127) bits; a message sent in fragments is put back together, control
    frames (which may come between fragments) are handed over as they come."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._fragments: bytearray | None = None
        self._fragment_opcode = TEXT

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """The messages ``data`` completes, as (opcode, payload)."""
        if self._buffer:
            self._buffer += data
            buffer: bytes | bytearray = self._buffer
        else:
            buffer = data
        messages: list[tuple[int, bytes]] = []
        end = len(buffer)
        position = 0
        while end - position >= 2:
            first, second = buffer[position], buffer[position + 1]
            size = second & 0x7F
            head = 2
            if size == 126:
                if end - position < 4:
                    break
                size = int.from_bytes(buffer[position + 2 : position + 4], "big")
                head = 4
            elif size == 127:
                if end - position < 10:
                    break
                size = int.from_bytes(buffer[position + 2 : position + 10], "big")
                head = 10
            mask = b""
            if second & 0x80:
                if end - position < head + 4:
                    break
                mask = bytes(buffer[position + head : position + head + 4])
                head += 4
            if end - position - head < size:
                break
            payload = bytes(buffer[position + head : position + head + size])
            position += head + size
            if mask:
                payload = mask_payload(payload, mask)
            opcode = first & 0x0F
            final = first & 0x80
            if opcode >= CLOSE:
                messages.append((opcode, payload))
            elif opcode == CONTINUATION:
                if self._fragments is None:
                    raise ValueError("a continuation frame with no message to continue")
                self._fragments += payload
                if final:
                    messages.append((self._fragment_opcode, bytes(self._fragments)))
                    self._fragments = None
            elif not final:
                self._fragments = bytearray(payload)
                self._fragment_opcode = opcode
            else:
                messages.append((opcode, payload))
        if position < end:
            self._buffer = bytearray(buffer[position:])
        elif self._buffer:
            self._buffer = bytearray()
        return messages


class Arrivals:
    """What every socket of one load process received: one row per measured message
    (socket, sequence number, arrival time), kept in flat arrays."""

    def __init__(self, sockets: int) -> None:
        self.sockets = array("i")
        self.seqs = array("q")
        self.times = array("d")
        #: The highest probe number each socket has seen (-1: none yet).
        self.probes = [-1] * sockets
        #: Frames that were neither a measured message nor a probe, nor protocol traffic.
        self.unexpected: list[str] = []

    def __len__(self) -> int:
        return len(self.seqs)


class Subscriber(asyncio.Protocol):
    """One socket: upgrade, ``connection_init`` with the token, then one ``subscribe``."""

    def __init__(
        self,
        index: int,
        host: str,
        path: str,
        token: str,
        subscription: dict[str, Any],
        arrivals: Arrivals,
    ) -> None:
        self.index = index
        self._request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n"
            f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {TRANSPORT_WS}\r\n\r\n"
        ).encode()
        self._init = orjson.dumps(
            {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
        )
        self._subscribe = orjson.dumps({"id": "1", "type": "subscribe", "payload": subscription})
        self._arrivals = arrivals
        self._head = bytearray()
        self._upgraded = False
        self._frames = FrameReader()
        self.transport: asyncio.Transport | None = None
        self.acknowledged: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False
        #: Why the socket ended, when it did: a close code and reason, or the error.
        self.ended: str | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(self._request)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.ended is None:
            self.ended = f"connection lost: {exc or 'closed by the server'}"
        self._fail(self.ended)

    def _fail(self, why: str) -> None:
        if not self.acknowledged.done():
            self.acknowledged.set_exception(ConnectionError(why))

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        if not self._upgraded:
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(self._head[: self._head.find(b"\r\n")])
            if status.split(b" ")[1:2] != [b"101"]:
                self.ended = f"upgrade refused: {status.decode(errors='replace')}"
                self._fail(self.ended)
                self.close()
                return
            data = bytes(self._head[end + 4 :])
            self._head = bytearray()
            self._upgraded = True
            self.send_text(self._init)
            if not data:
                return
        try:
            messages = self._frames.feed(data)
        except ValueError as error:
            self.ended = f"bad framing: {error}"
            self.close()
            return
        for opcode, payload in messages:
            if opcode == TEXT:
                self._text(payload, now)
            elif opcode == PING:
                self._send(PONG, payload)
            elif opcode == CLOSE:
                code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
                self.ended = f"closed by the server: {code} {payload[2:].decode(errors='replace')}".strip()
                self._fail(self.ended)
                self._send(CLOSE, payload[:2])
                self.close()

    def _text(self, payload: bytes, now: float) -> None:
        start = payload.find(SEQ_MARK)
        if start >= 0:
            start += len(SEQ_MARK)
            arrivals = self._arrivals
            arrivals.sockets.append(self.index)
            arrivals.seqs.append(int(payload[start : payload.find(MARK_END, start)]))
            arrivals.times.append(now)
            return
        start = payload.find(PROBE_MARK)
        if start >= 0:
            start += len(PROBE_MARK)
            probe = int(payload[start : payload.find(MARK_END, start)])
            if probe > self._arrivals.probes[self.index]:
                self._arrivals.probes[self.index] = probe
            return
        message = orjson.loads(payload)
        kind = message.get("type")
        if kind == "connection_ack":
            if not self.acknowledged.done():
                self.acknowledged.set_result(None)
                self.send_text(self._subscribe)
        elif kind == "ping":
            self.send_text(b'{"type":"pong"}')
        elif kind != "pong":
            self._arrivals.unexpected.append(f"socket {self.index}: {payload[:300].decode(errors='replace')}")

    def send_text(self, text: bytes) -> None:
        self._send(TEXT, text)

    def _send(self, opcode: int, payload: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(client_frame(opcode, payload))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def subscribe(
    index: int,
    host: str,
    port: int,
    path: str,
    token: str,
    subscription: dict[str, Any],
    arrivals: Arrivals,
    within: float = 30.0,
) -> Subscriber:
    """A socket whose ``connection_init`` was acknowledged (within ``within`` seconds of
    connecting) and whose ``subscribe`` is sent."""
    loop = asyncio.get_running_loop()
    _, subscriber = await asyncio.wait_for(
        loop.create_connection(
            lambda: Subscriber(index, f"{host}:{port}", path, token, subscription, arrivals), host, port
        ),
        within,
    )
    try:
        await asyncio.wait_for(asyncio.shield(subscriber.acknowledged), within)
    except BaseException:
        subscriber.acknowledged.cancel()  # nobody waits for it any more
        subscriber.close()
        raise
    return subscriber
