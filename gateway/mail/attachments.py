"""Attachment content in Cassandra: one partition per chunk of at most 1000 KiB."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from uuid import UUID

from gateway.db.session import Database
from gateway.settings import Settings

#: Bytes per stored chunk (1000 KiB): far under Cassandra's mutation and frame
#: limits, large enough that a 25 MB file is 26 reads.
CHUNK_SIZE = 1000 * 1024
#: The most one attachment may hold (25 MiB), as the API promises.
MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
#: The most bytes asked of the network at once while filling a chunk.
READ_PIECE = 64 * 1024

ReadPiece = Callable[[int], Awaitable[bytes]]
"""(at most n bytes) -> the next bytes of an incoming file; b"" at its end."""


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

        At most one chunk is held: pieces are read until they fill a chunk, the
        chunk is written, and only then is more read (the socket's flow control
        holds the sender meanwhile). Past ``limit`` the chunks already written
        are deleted and :class:`TooLarge` is raised.
        """
        size = 0
        chunks = 0
        pieces: list[bytes] = []
        pending = 0

        async def flush() -> None:
            nonlocal chunks, pending
            data = b"".join(pieces)
            pieces.clear()
            pending = 0
            await self.write_chunk(attachment_id, chunks, data)
            chunks += 1

        try:
            while piece := await read(READ_PIECE):
                size += len(piece)
                if size > limit:
                    raise TooLarge(f"larger than {limit} bytes")
                while piece:
                    room = CHUNK_SIZE - pending
                    head, piece = (piece, b"") if len(piece) <= room else (piece[:room], piece[room:])
                    pieces.append(head)
                    pending += len(head)
                    if pending == CHUNK_SIZE:
                        await flush()
            if pending:
                await flush()
            return size, chunks
        except BaseException:
            await asyncio.shield(self.delete(attachment_id, chunks + 1))
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

    async def write_chunk(self, attachment_id: UUID, number: int, data: bytes) -> None:
        await self.db.execute(
            "INSERT INTO attachment_chunks (attachment_id, chunk_number, data) VALUES (?, ?, ?)",
            (attachment_id, number, data),
        )

    async def read_chunk(self, attachment_id: UUID, number: int) -> bytes:
        row = (
            await self.db.execute(
                "SELECT data FROM attachment_chunks WHERE attachment_id = ? AND chunk_number = ?",
                (attachment_id, number),
            )
        ).one()
        if row is None:
            raise LookupError(f"chunk {number} of attachment {attachment_id} is missing")
        return row["data"] or b""

    async def chunks(self, attachment_id: UUID, count: int, *, ahead: int = 1) -> AsyncIterator[bytes]:
        """The chunks in order, reading up to ``ahead`` chunks beyond the one being consumed."""
        pending: list[asyncio.Task[bytes]] = []
        upcoming = 0
        try:
            while upcoming < count or pending:
                while upcoming < count and len(pending) <= ahead:
                    pending.append(asyncio.ensure_future(self.read_chunk(attachment_id, upcoming)))
                    upcoming += 1
                data = await pending.pop(0)
                yield data
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def delete(self, attachment_id: UUID, chunk_count: int) -> None:
        if chunk_count <= 0:
            return
        await self.db.batch(
            [
                ("DELETE FROM attachment_chunks WHERE attachment_id = ? AND chunk_number = ?",
                 (attachment_id, n))
                for n in range(chunk_count)
            ],
            logged=False,
        )
