"""Attachment content in Cassandra: one partition per chunk of at most 1000 KiB."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from uuid import UUID

from gateway.db.session import Database
from gateway.settings import Settings

#: Bytes per chunk, i.e. per partition (1000 KiB): a 25 MB file is 26 partitions
#: that the cluster serves in parallel, each far under Cassandra's limits.
CHUNK_SIZE = 1000 * 1024
#: Bytes per row inside a chunk's partition: each write moves a quarter chunk.
PART_SIZE = CHUNK_SIZE // 4
#: The most one attachment may hold (25 MiB), as the API promises.
MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
#: The most bytes asked of the network at once.
READ_PIECE = 64 * 1024

ReadPiece = Callable[[int], Awaitable[bytes]]
"""(at most n bytes) -> the next bytes of an incoming file; b"" at its end."""


def chunk_count_of(size: int) -> int:
    return -(-size // CHUNK_SIZE)


class TooLarge(Exception):
    """The incoming file went past the limit; nothing of it is kept."""


class AttachmentStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    async def write_stream(
        self, attachment_id: UUID, read: ReadPiece, *, limit: int = MAX_ATTACHMENT_BYTES
    ) -> tuple[int, int]:
        """Store a file as it arrives; returns (size, chunk count).

        Bytes are read until they fill a part (a quarter chunk), the part is
        written, and only then is more read, so the socket's flow control holds
        the sender meanwhile and the gateway never holds more than one part of
        the file. Past ``limit`` everything written is deleted and
        :class:`TooLarge` is raised.
        """
        size = 0
        written = 0  # parts written
        pieces: list[bytes] = []
        pending = 0

        async def flush() -> None:
            nonlocal written, pending
            data = b"".join(pieces)
            pieces.clear()
            pending = 0
            await self.write_part(attachment_id, written, data)
            written += 1

        try:
            while piece := await read(READ_PIECE):
                size += len(piece)
                if size > limit:
                    raise TooLarge(f"larger than {limit} bytes")
                while piece:
                    room = PART_SIZE - pending
                    head, piece = (piece, b"") if len(piece) <= room else (piece[:room], piece[room:])
                    pieces.append(head)
                    pending += len(head)
                    if pending == PART_SIZE:
                        await flush()
            if pending:
                await flush()
            return size, chunk_count_of(size)
        except BaseException:
            await asyncio.shield(self.delete(attachment_id, chunk_count_of((written + 1) * PART_SIZE)))
            raise

    async def write_bytes(self, attachment_id: UUID, content: bytes) -> tuple[int, int]:
        """Store a file held in memory (demo data)."""
        offset = 0

        async def read(n: int) -> bytes:
            nonlocal offset
            piece = content[offset : offset + n]
            offset += len(piece)
            return piece

        return await self.write_stream(attachment_id, read)

    async def write_part(self, attachment_id: UUID, index: int, data: bytes) -> None:
        """Part ``index`` of the file, counted from its start across chunks."""
        per_chunk = CHUNK_SIZE // PART_SIZE
        await self.db.execute(
            "INSERT INTO attachment_chunks (attachment_id, chunk_number, part, data) VALUES (?, ?, ?, ?)",
            (attachment_id, index // per_chunk, index % per_chunk, data),
        )

    async def read_chunk(self, attachment_id: UUID, number: int) -> list[bytes]:
        """The parts of one chunk, in order: one single-partition read."""
        per_chunk = CHUNK_SIZE // PART_SIZE
        rows = (
            await self.db.execute(
                "SELECT data FROM attachment_chunks WHERE attachment_id = ? AND chunk_number = ? LIMIT ?",
                (attachment_id, number, per_chunk),
                fetch_size=per_chunk,
            )
        ).rows
        if not rows:
            raise LookupError(f"chunk {number} of attachment {attachment_id} is missing")
        return [row["data"] or b"" for row in rows]

    async def chunks(
        self, attachment_id: UUID, count: int, *, first: int = 0, ahead: int = 1
    ) -> AsyncGenerator[list[bytes], None]:
        """Chunks ``first`` to ``count - 1`` in order, reading up to ``ahead`` chunks beyond
        the one being consumed."""
        pending: list[asyncio.Task[list[bytes]]] = []
        upcoming = first
        try:
            while upcoming < count or pending:
                while upcoming < count and len(pending) <= ahead:
                    pending.append(asyncio.ensure_future(self.read_chunk(attachment_id, upcoming)))
                    upcoming += 1
                parts = await pending.pop(0)
                yield parts
                del parts
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def read_range(
        self, attachment_id: UUID, start: int, stop: int, *, ahead: int = 1
    ) -> AsyncGenerator[bytes | memoryview, None]:
        """Bytes ``start`` to ``stop - 1`` of a file, reading only the chunks that hold them.

        Every chunk but the last is exactly ``CHUNK_SIZE`` bytes (``write_stream`` fills
        them), so byte ``n`` is in chunk ``n // CHUNK_SIZE``; the edge chunks are sliced
        without copying.
        """
        if start >= stop:
            return
        first = start // CHUNK_SIZE
        offset = first * CHUNK_SIZE
        chunks = self.chunks(attachment_id, (stop - 1) // CHUNK_SIZE + 1, first=first, ahead=ahead)
        async with contextlib.aclosing(chunks):
            async for parts in chunks:
                chunk_end = offset + CHUNK_SIZE
                for data in parts:
                    low, high = max(start - offset, 0), min(stop - offset, len(data))
                    offset += len(data)
                    if low < high:
                        yield data if (low, high) == (0, len(data)) else memoryview(data)[low:high]
                if offset < min(stop, chunk_end):
                    raise LookupError(f"a chunk of attachment {attachment_id} is short")

    async def delete(self, attachment_id: UUID, chunk_count: int) -> None:
        """Deletes the whole partition of each chunk (its parts), all in one batch."""
        if chunk_count <= 0:
            return
        await self.db.batch(
            [
                (
                    "DELETE FROM attachment_chunks WHERE attachment_id = ? AND chunk_number = ?",
                    (attachment_id, n),
                )
                for n in range(chunk_count)
            ],
            logged=False,
        )
