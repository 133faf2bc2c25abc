"""A loopback TCP proxy the tests can cut and restore, to make Cassandra vanish for one gateway."""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    def __init__(self, target_host: str, target_port: int, latency: float = 0.0) -> None:
        self.target = (target_host, target_port)
        #: Seconds each chunk waits before it is passed on, both ways (a slow network).
        self.latency = latency
        #: When set, answers reach the client in pieces of at most this many bytes, each
        #: after a short pause so that it is read on its own (a congested network).
        self.answer_pieces = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._marker: bytes | None = None
        self._marker_sent = asyncio.Event()
        #: Answers held back since the marker went, in order, with the writer each is for.
        self._held: list[tuple[asyncio.StreamWriter, bytes]] = []

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    def hold_answers_after(self, marker: bytes) -> asyncio.Event:
        """Pass requests on as before, but once one carrying ``marker`` (a bound value,
        sent as plain bytes: the driver does not compress) has gone to Cassandra, keep
        every answer from the gateway. The returned event is set when that request
        went; a :meth:`cut` then loses the answer of a write Cassandra received."""
        self._marker = marker
        self._marker_sent = asyncio.Event()
        return self._marker_sent

    def release(self) -> None:
        """Pass on the answers held since the marker went, in order, and every answer after."""
        self._marker = None
        self._marker_sent = asyncio.Event()
        held, self._held = self._held, []
        for writer, data in held:
            if not writer.is_closing():
                writer.write(data)

    async def cut(self) -> None:
        """Stop listening and drop every open connection."""
        self._marker = None
        self._marker_sent = asyncio.Event()
        self._held = []
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update({writer, up_writer})
        for task in (
            asyncio.create_task(self._pipe(reader, up_writer, upstream=True)),
            asyncio.create_task(self._pipe(up_reader, writer, upstream=False)),
        ):
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, upstream: bool
    ) -> None:
        tail = b""
        try:
            while data := await reader.read(65536):
                if self.latency:
                    await asyncio.sleep(self.latency)
                if not upstream and self._marker_sent.is_set():
                    self._held.append((writer, data))  # held back until a release, lost to a cut
                    continue
                if not upstream and self.answer_pieces:
                    for start in range(0, len(data), self.answer_pieces):
                        writer.write(data[start : start + self.answer_pieces])
                        await writer.drain()
                        await asyncio.sleep(0.002)
                else:
                    writer.write(data)
                    await writer.drain()
                if upstream and self._marker is not None:
                    window, tail = tail + data, (tail + data)[-len(self._marker) :]
                    if self._marker in window:
                        self._marker_sent.set()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.transport.abort()
