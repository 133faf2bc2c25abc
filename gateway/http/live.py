"""A subscription's results as WebSocket frames, written straight to its socket.

The live hub (``gateway/graph/live.py``) encodes a result once for every
subscriber that shares it; :class:`SocketSink` wraps those bytes in the
protocol's message (``{"id": ..., "type": "next", "payload": ...}`` for
``graphql-transport-ws``, ``{"type": "data", ...}`` for legacy ``graphql-ws``)
and writes one unmasked text frame (RFC 6455 §5.2) to the socket's transport,
synchronously: no task wakes per delivery and nothing waits for a slow peer.
Such frames are valid whether or not per-message deflate was negotiated (a
frame without RSV1 is uncompressed, RFC 7692 §6), and they never split another
writer's frame: every write on the loop is whole.

A subscription the hub has parked (``gateway/http/websocket.py``) ends through its
sink too: the error that ended it, if any, as a result, then the protocol's
``complete`` message.

A peer that does not read falls behind: once more than ``limit`` bytes wait in
its socket's write buffer, it is cut off, never buffered without bound. It is
sent close code 1013 ("try again later": the client reconnects and catches up
by query or by resuming the subscription from its last cursor) and, if it still
has not read what waits after ``grace`` seconds, the connection is dropped, so
what it held is freed.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

import orjson

#: Close code and reason of a socket cut off for falling behind.
TOO_SLOW_CODE = 1013
TOO_SLOW_REASON = "Too slow: the socket fell behind its messages"

_FIN_TEXT = 0x81
_LEN2 = struct.Struct("!BBH")
_LEN8 = struct.Struct("!BBQ")


def text_frame(message: bytes) -> bytes:
    """``message`` as one unmasked, unfragmented text frame (a server's frames carry no mask)."""
    length = len(message)
    if length < 126:
        return bytes((_FIN_TEXT, length)) + message
    if length < 65536:
        return _LEN2.pack(_FIN_TEXT, 126, length) + message
    return _LEN8.pack(_FIN_TEXT, 127, length) + message


def message_prefix(protocol: str, operation_id: str) -> bytes:
    """What goes before the payload in the protocol's result message (the payload, then ``}``)."""
    encoded_id = orjson.dumps(operation_id)
    if protocol == "graphql-ws":
        return b'{"type":"data","id":' + encoded_id + b',"payload":'
    return b'{"id":' + encoded_id + b',"type":"next","payload":'


def complete_message(protocol: str, operation_id: str) -> bytes:
    """The protocol's ``complete`` message for the operation."""
    encoded_id = orjson.dumps(operation_id)
    if protocol == "graphql-ws":
        return b'{"type":"complete","id":' + encoded_id + b"}"
    return b'{"id":' + encoded_id + b',"type":"complete"}'


class SocketSink:
    """One subscription's frame writer (a :class:`gateway.graph.live.LiveSink`)."""

    __slots__ = ("_active", "_complete", "_cut", "_dropped", "_prefix", "_transport", "grace", "limit")

    def __init__(
        self,
        transport: asyncio.Transport,
        protocol: str,
        operation_id: str,
        *,
        limit: int,
        cut: Callable[[int, str], None],
        active: Callable[[], bool] | None = None,
        grace: float = 5.0,
    ) -> None:
        self._transport = transport
        self._prefix = message_prefix(protocol, operation_id)
        self._complete = complete_message(protocol, operation_id)
        self.limit = limit
        self.grace = grace
        self._cut = cut
        self._active = active
        self._dropped = False

    def deliver(self, payload: bytes, made: dict[bytes, bytes] | None = None) -> bool:
        """Write ``payload`` as this operation's result frame. ``made``: the frames made of
        the same payload for other sinks, by message prefix: sockets whose operations share
        an id (clients number theirs from 1) share one frame."""
        transport = self._transport
        active = self._active
        if self._dropped or transport.is_closing() or (active is not None and not active()):
            return False
        if transport.get_write_buffer_size() > self.limit:
            self._cut_off()
            return False
        if made is None:
            transport.write(text_frame(self._prefix + payload + b"}"))
            return True
        prefix = self._prefix
        frame = made.get(prefix)
        if frame is None:
            frame = made[prefix] = text_frame(prefix + payload + b"}")
        transport.write(frame)
        return True

    def parked(self) -> None:
        """The live hub follows on for the operation: the sink stays active until the
        subscription ends, whatever became of the operation's task."""
        self._active = None

    def complete(self) -> None:
        """Tell the client the subscription is over (the protocol's ``complete``)."""
        transport = self._transport
        if not self._dropped and not transport.is_closing():
            transport.write(text_frame(self._complete))

    def _cut_off(self) -> None:
        self._dropped = True
        self._cut(TOO_SLOW_CODE, TOO_SLOW_REASON)
        transport = self._transport
        asyncio.get_running_loop().call_later(self.grace, _abort_if_open, transport)


def _abort_if_open(transport: asyncio.Transport) -> None:
    if not transport.is_closing() or transport.get_write_buffer_size():
        transport.abort()
