"""Comments in Cassandra: time-bucketed threads, oldest first, and their counts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from gateway.db.clock import new_timeuuid, time_of
from gateway.db.session import Database, Row
from gateway.db.timeline import Page, Position, bucket_of_timeuuid, read_page, validate_granularity
from gateway.settings import Settings


@dataclass(frozen=True)
class CommentRecord:
    id: UUID
    slug: str
    name: str
    email: str
    text: str

    @property
    def posted_at(self) -> datetime:
        return time_of(self.id)

    @classmethod
    def from_row(cls, row: Row, slug: str) -> CommentRecord:
        return cls(
            id=row["id"], slug=slug, name=row["name"] or "", email=row["email"] or "", text=row["text"] or ""
        )


class CommentStore:
    """A post's thread is split into time buckets (``BLOG_COMMENT_BUCKET``, a day by
    default): comments come in bursts in the first days after a post is published,
    so a day bounds a viral thread's partition to one day of comments, while
    ``comment_buckets`` lists only the days that have any, so a quiet thread that
    lives for years costs one index read per 16 of its active days."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.granularity = validate_granularity(settings.blog_comment_bucket)

    async def add(self, slug: str, *, name: str, email: str, text: str) -> CommentRecord:
        """Store a comment, then count it.

        The comment and its bucket's entry in ``comment_buckets`` go in one
        LOGGED batch (two partitions): a comment whose bucket is not listed
        would be invisible to paging, and the batchlog guarantees both land
        once the batch is accepted. The counter moves only after that (counter
        writes cannot join a logged batch), so a failed write never counts a
        comment that is not there; a counter increment is not idempotent and is
        not retried.
        """
        comment = CommentRecord(id=new_timeuuid(), slug=slug, name=name, email=email, text=text)
        bucket = bucket_of_timeuuid(comment.id, self.granularity)
        await self.db.batch(
            [
                ("INSERT INTO comment_buckets (slug, bucket) VALUES (?, ?)", (slug, bucket)),
                (
                    "INSERT INTO comments (slug, bucket, id, name, email, text) VALUES (?, ?, ?, ?, ?, ?)",
                    (slug, bucket, comment.id, name, email, text),
                ),
            ],
            logged=True,
        )
        await self.db.execute("UPDATE comment_counts SET comments = comments + 1 WHERE slug = ?", (slug,))
        return comment

    async def page(self, slug: str, *, first: int, after: Position | None) -> Page[CommentRecord]:
        """A post's comments, oldest first, across its buckets."""

        async def list_buckets(past: int | None, limit: int) -> list[int]:
            if past is None:
                result = await self.db.execute(
                    "SELECT bucket FROM comment_buckets WHERE slug = ? LIMIT ?", (slug, limit)
                )
            else:
                result = await self.db.execute(
                    "SELECT bucket FROM comment_buckets WHERE slug = ? AND bucket > ? LIMIT ?",
                    (slug, past, limit),
                )
            return [row["bucket"] for row in result.rows]

        async def fetch(bucket: int, past: UUID | None, limit: int) -> list[tuple[UUID, CommentRecord]]:
            columns = "id, name, email, text"
            if past is None:
                result = await self.db.execute(
                    f"SELECT {columns} FROM comments WHERE slug = ? AND bucket = ? LIMIT ?",
                    (slug, bucket, limit),
                    fetch_size=limit,
                )
            else:
                result = await self.db.execute(
                    f"SELECT {columns} FROM comments WHERE slug = ? AND bucket = ? AND id > ? LIMIT ?",
                    (slug, bucket, past, limit),
                    fetch_size=limit,
                )
            return [(row["id"], CommentRecord.from_row(row, slug)) for row in result.rows]

        return await read_page(list_buckets, fetch, first=first, after=after)

    async def counts(self, slugs: Iterable[str]) -> dict[str, int]:
        """``Post.commentCount`` of many posts: one ``IN`` read per 100."""
        rows = await self.db.select_in("SELECT slug, comments FROM comment_counts WHERE slug IN ?", slugs)
        return {row["slug"]: int(row["comments"] or 0) for row in rows}

    async def recount(self, slug: str) -> tuple[int, int]:
        """Move ``comment_counts`` to the number of stored comments; (before, after).

        A counter increment that failed (or timed out) after its comment was
        stored leaves the count one short, and one cannot be retried safely.
        Counting the thread's partitions gives the truth; the counter is moved
        by the difference. A comment arriving during the recount may be counted
        twice or not at all, so run it while the thread is quiet (or twice).
        """
        buckets = await self.db.execute_all("SELECT bucket FROM comment_buckets WHERE slug = ?", (slug,))
        stored = 0
        for row in buckets:
            result = await self.db.execute(
                "SELECT COUNT(*) AS n FROM comments WHERE slug = ? AND bucket = ?", (slug, row["bucket"])
            )
            stored += int(result.rows[0]["n"])
        before = (await self.counts([slug])).get(slug, 0)
        if stored != before:
            await self.db.execute(
                "UPDATE comment_counts SET comments = comments + ? WHERE slug = ?", (stored - before, slug)
            )
        return before, stored
