"""Cassandra connections served by the gateway's own event loop.

The driver's stock connections (libev) read and write on a thread of their own:
every response is decoded there, then handed to the event loop with
``call_soon_threadsafe``, and the two threads take turns at the interpreter
lock for every round trip. :class:`LoopConnection` does the socket work on the
event loop that awaits the results instead: a response is decoded where it is
awaited, and the statements sent during one pass of the loop (by every request
it is serving) leave in one write to the socket.

The driver still calls connections from its own threads (the control
connection, heartbeats, pool upkeep, retries on its scheduler). Those calls are
handed to the loop with ``call_soon_threadsafe``; a connection is opened from
one of those threads too, which waits while the loop attaches the socket. A
connection can therefore never be opened on the loop itself, and the session's
blocking calls (``Session.execute``, ``Session.prepare``, ``Cluster.connect``)
must run in a worker thread, as they do throughout the gateway.

The class implements the driver's reactor interface, as its own reactors (libev,
asyncore, asyncio) do; the protected parts of it it uses (the socket, the first
message, the read buffer) are reached through :mod:`gateway.db.driver_internals`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any, ClassVar

from cassandra.connection import Connection, ConnectionShutdown

from gateway.db.driver_internals import feed_received, open_socket, send_options, socket_of
from gateway.db.segments import WholeSegments

log = logging.getLogger(__name__)


class LoopConnection(WholeSegments, Connection):  # type: ignore[misc]  # the driver is untyped
    """A driver connection whose socket belongs to one asyncio event loop.

    Use :meth:`for_running_loop` on the loop to get the class to hand to
    ``Cluster(connection_class=...)``."""

    loop: ClassVar[asyncio.AbstractEventLoop]
    loop_thread: ClassVar[int]

    _transport: asyncio.BaseTransport | None = None
    is_closed: bool
    is_defunct: bool

    @classmethod
    def for_running_loop(cls) -> type[LoopConnection]:
        """This class bound to the running event loop (call it on that loop)."""
        loop = asyncio.get_running_loop()
        attrs = {"loop": loop, "loop_thread": threading.get_ident()}
        return type("LoopConnection", (cls,), attrs)

    @classmethod
    def on_loop(cls) -> bool:
        return threading.get_ident() == cls.loop_thread

    # -- the reactor interface the driver calls ------------------------------

    @classmethod
    def initialize_reactor(cls) -> None:
        """Nothing to start: the event loop is already running."""

    @classmethod
    def handle_fork(cls) -> None:
        """A forked child opens its own loop and cluster; nothing is shared."""

    @classmethod
    def create_timer(cls, timeout: float, callback: Callable[[], Any]) -> LoopTimer:
        return LoopTimer(cls, timeout, callback)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.on_loop():
            # Opening waits for the loop to attach the socket: on the loop that never happens.
            raise RuntimeError("a Cassandra connection cannot be opened on the event loop it serves")
        Connection.__init__(self, *args, **kwargs)
        self._pending: list[bytes] = []
        if self.ssl_context is not None:
            raise ValueError("TLS to Cassandra needs the driver's own I/O thread (CASSANDRA_IO=thread)")
        sock = open_socket(self)
        sock.setblocking(False)
        attached = asyncio.run_coroutine_threadsafe(self._attach(sock), self.loop)
        try:
            attached.result(self.connect_timeout)
        except BaseException:
            attached.cancel()
            sock.close()
            raise
        send_options(self)

    async def _attach(self, sock: socket.socket) -> None:
        transport, _ = await self.loop.create_connection(lambda: _Protocol(self), sock=sock)
        self._transport = transport

    def push(self, data: bytes) -> None:
        if self.on_loop():
            self._queue(data)
        else:
            self._call_on_loop(self._queue, data)

    def _queue(self, data: bytes) -> None:
        """Frames pushed during one pass of the loop leave in one write (one system call)."""
        pending = self._pending
        pending.append(data)
        if len(pending) == 1:
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        pending = self._pending
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        pending.clear()
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.write(data)  # type: ignore[attr-defined]  # a stream transport

    def close(self) -> None:
        with self.lock:
            if self.is_closed:
                return
            self.is_closed = True
        log.debug("closing connection (%s) to %s", id(self), self.endpoint)
        if self.on_loop():
            self._close_transport()
        else:
            self._call_on_loop(self._close_transport)
        if not self.is_defunct:
            # Nothing in flight is left waiting for an answer that cannot come.
            self.error_all_requests(ConnectionShutdown(f"Connection to {self.endpoint} was closed"))
            self.connected_event.set()

    def _close_transport(self) -> None:
        if self._transport is not None:
            self._transport.close()
        else:
            self._close_socket()

    def _close_socket(self) -> None:
        sock = socket_of(self)
        if sock is not None:
            sock.close()

    def _call_on_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: nothing can be sent, and the socket goes
            if self._transport is None:
                self._close_socket()


class _Protocol(asyncio.Protocol):
    """Feeds what the socket receives to the driver's frame reader."""

    def __init__(self, connection: LoopConnection) -> None:
        self.connection = connection

    def data_received(self, data: bytes) -> None:
        feed_received(self.connection, data)

    def eof_received(self) -> bool:
        log.debug("connection %s closed by server", self.connection)
        return False  # the transport closes, and connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        connection = self.connection
        if exc is not None:
            connection.defunct(exc)
        else:
            connection.close()


class LoopTimer:
    """A driver timer (request timeouts, speculative retries) on the event loop.

    The driver starts and cancels timers from its own threads as well as from
    the loop; the loop's timer handles are only touched on the loop, and the
    ``_cancelled`` flag makes a late start or fire a no-op."""

    __slots__ = ("_cancelled", "_handle", "_owner", "callback", "end")

    def __init__(self, owner: type[LoopConnection], timeout: float, callback: Callable[[], Any]) -> None:
        self.callback = callback
        self._owner = owner
        self._cancelled = False
        self._handle: asyncio.TimerHandle | None = None
        self.end = owner.loop.time() + timeout
        if owner.on_loop():
            self._handle = owner.loop.call_later(timeout, self._fire)
        else:
            self._off_loop(self._start, timeout)

    def _start(self, timeout: float) -> None:
        if not self._cancelled:
            self._handle = self._owner.loop.call_later(timeout, self._fire)

    def _fire(self) -> None:
        if not self._cancelled:
            self._cancelled = True
            callback, self.callback = self.callback, _spent
            callback()

    def cancel(self) -> None:
        self._cancelled = True
        # The request keeps its timer: dropping the callback (a method of the request)
        # leaves no reference cycle for the garbage collector to find.
        self.callback = _spent
        handle = self._handle
        if handle is None:
            return
        self._handle = None
        if self._owner.on_loop():
            handle.cancel()
        else:
            self._off_loop(handle.cancel)

    def finish(self) -> None:
        """Run the callback now unless cancelled (the driver's Timer interface)."""
        self._fire()

    def _off_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            self._owner.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # a closed loop runs no timers; requests fail with their connection
            self._cancelled = True

    def __lt__(self, other: LoopTimer) -> bool:
        return self.end < other.end


def _spent() -> None:
    """The callback of a timer that fired or was cancelled."""
