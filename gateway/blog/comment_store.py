"""Comments in Cassandra: time-bucketed threads, oldest first, and their counts."""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from gateway.blog.records import CommentRecord
from gateway.db.clock import new_timeuuid
from gateway.db.idempotency import KeyClaim, MutationKeys
from gateway.db.session import Database, Row
from gateway.db.timeline import (
    BucketedTimeline,
    Paged,
    Position,
    bucket_of_timeuuid,
    validate_granularity,
)
from gateway.settings import Settings

_THREAD = BucketedTimeline(
    items="comments",
    index="comment_buckets",
    key=("slug",),
    item_id="id",
    columns="id, name, email, text",
    newest_first=False,
)


class CommentStore:
    """A post's thread is split into time buckets (``GATEWAY_BLOG_COMMENT_BUCKET``, a day by
    default): comments come in bursts in the first days after a post is published,
    so a day bounds a viral thread's partition to one day of comments, while
    ``comment_buckets`` lists only the days that have any, so a quiet thread that
    lives for years costs one index read per 16 of its active days."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.granularity = validate_granularity(settings.blog_comment_bucket)
        self.keys = MutationKeys(db)

    async def add(
        self, slug: str, *, name: str, email: str, text: str, client_key: str | None = None
    ) -> CommentRecord:
        """Store a comment, then count it.

        With ``client_key`` the comment's id is claimed under the key first
        (``gateway/db/idempotency.py``): a retry returns the stored comment, or
        writes it under the claimed id if the first request never did, and the
        counter moves for exactly one of them. Comments are anonymous, so keys
        are scoped by post.

        The comment and its bucket's entry in ``comment_buckets`` go in one
        LOGGED batch (two partitions): a comment whose bucket is not listed
        would be invisible to paging, and the batchlog guarantees both land
        once the batch is accepted. The counter moves only after that (counter
        writes cannot join a logged batch), so a failed write never counts a
        comment that is not there; a counter increment is not idempotent and is
        not retried.
        """
        comment_id = new_timeuuid()
        claim: KeyClaim | None = None
        if client_key is not None:
            claim = await self.keys.claim("", f"addComment:{slug}", client_key, str(comment_id))
            comment_id = UUID(claim.result)
            if not claim.first:
                stored = await self.get(slug, comment_id)
                if stored is not None:
                    if await self.keys.take_count(claim):
                        await self._count(slug)
                    return stored
        comment = CommentRecord(id=comment_id, slug=slug, name=name, email=email, text=text)
        bucket = bucket_of_timeuuid(comment.id, self.granularity)
        await self.db.batch(
            [
                _THREAD.add_bucket((slug,), bucket),
                (
                    "INSERT INTO comments (slug, bucket, id, name, email, text) VALUES (?, ?, ?, ?, ?, ?)",
                    (slug, bucket, comment.id, name, email, text),
                ),
            ],
            logged=True,
        )
        if claim is None or await self.keys.take_count(claim):
            await self._count(slug)
        return comment

    async def _count(self, slug: str) -> None:
        await self.db.execute("UPDATE comment_counts SET comments = comments + 1 WHERE slug = ?", (slug,))

    async def get(self, slug: str, comment_id: UUID) -> CommentRecord | None:
        bucket = bucket_of_timeuuid(comment_id, self.granularity)
        row = (
            await self.db.execute(
                "SELECT id, name, email, text FROM comments WHERE slug = ? AND bucket = ? AND id = ?",
                (slug, bucket, comment_id),
            )
        ).one()
        return CommentRecord.from_row(row, slug) if row else None

    async def page(
        self, slug: str, *, size: int, cursor: Position | None, backward: bool = False
    ) -> Paged[CommentRecord]:
        """A post's comments, oldest first, across its buckets, either way."""
        return await _THREAD.read(
            self.db,
            (slug,),
            lambda row: CommentRecord.from_row(row, slug),
            size=size,
            cursor=cursor,
            backward=backward,
        )

    async def counts(self, slugs: Iterable[str]) -> dict[str, int]:
        """``Post.commentCount`` of many posts: one ``IN`` read per 100."""
        rows = await self.db.select_in("SELECT slug, comments FROM comment_counts WHERE slug IN ?", slugs)
        return {row["slug"]: int(row["comments"] or 0) for row in rows}

    async def recount(self, slug: str) -> tuple[int, int]:
        """Move ``comment_counts`` to the number of stored comments; (before, after).

        A counter increment that failed (or timed out) after its comment was
        stored leaves the count one short, and one cannot be retried safely.
        Counting the thread's partitions (keyed slices, never a whole partition in
        one read) gives the truth; the counter is moved
        by the difference. A comment arriving during the recount may be counted
        twice or not at all, so run it while the thread is quiet (or twice).
        """
        stored = 0
        for bucket in await _THREAD.buckets(self.db, (slug,)):
            stored += len(await _THREAD.bucket_items(self.db, (slug,), bucket, _counted))
        before = (await self.counts([slug])).get(slug, 0)
        if stored != before:
            await self.db.execute(
                "UPDATE comment_counts SET comments = comments + ? WHERE slug = ?", (stored - before, slug)
            )
        return before, stored


def _counted(row: Row) -> None:
    """Recounts need the rows, not their values."""
