"""Posts in Cassandra: the slug claim, the timelines a post is filed in, the counts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from gateway.blog.records import PostDraft, PostRecord, PostSummary
from gateway.db.clock import new_timeuuid, time_of
from gateway.db.idempotency import KeyClaim, MutationKeys
from gateway.db.session import Database, Params, Row
from gateway.db.timeline import (
    BucketedTimeline,
    Paged,
    Position,
    bucket_of_timeuuid,
    validate_granularity,
)
from gateway.settings import Settings

#: The tag every post is also filed under: the "all posts" timeline. Not a valid
#: tag (tags are ``[a-z0-9-]``), so no real tag can collide with it.
ALL_POSTS = "*"


@dataclass(frozen=True)
class Published:
    post: PostRecord
    #: False when this publish repeated one that had already claimed the slug.
    created: bool


_POST_COLUMNS = "slug, id, author, title, body, tags"

_TAG_TIMELINE = BucketedTimeline(
    items="posts_by_tag",
    index="post_buckets_by_tag",
    key=("tag",),
    item_id="id",
    columns="id, slug, author, title, tags",
    newest_first=True,
)

#: An author's posts (``User.posts``), bucketed by ``GATEWAY_BLOG_AUTHOR_BUCKET``.
AUTHOR_TIMELINE = BucketedTimeline(
    items="posts_by_author_bucket",
    index="post_buckets_by_author",
    key=("author",),
    item_id="id",
    columns="id, slug, title, tags",
    newest_first=True,
)


class PostStore:
    """Posts and the timelines they are filed in.

    Tag timelines and "all posts" are split into time buckets
    (``GATEWAY_BLOG_POST_BUCKET``, a month by default): even a platform-wide 1000 posts a
    day makes a month bucket of 30 000 summary rows (~10 MB), well inside what one
    partition should hold, while a front page of 10 is nearly always one bucket
    slice plus one read of the small bucket index. Bucket numbers of different
    granularities do not interleave in time order, so the granularity is fixed
    for a keyspace's life.

    An author's list is bucketed the same way by ``GATEWAY_BLOG_AUTHOR_BUCKET`` (a year
    by default: one author's year stays within the size of a platform's month,
    and a page of an occasional writer is still one bucket slice).
    """

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.granularity = validate_granularity(settings.blog_post_bucket)
        self.author_granularity = validate_granularity(settings.blog_author_bucket)
        self.keys = MutationKeys(db)

    # -- publishing ---------------------------------------------------------

    async def publish_keyed(self, draft: PostDraft, client_key: str) -> Published | None:
        """:meth:`publish` under an idempotency key (``gateway/db/idempotency.py``).

        The key claims the slug for the author: a retry returns the post the
        first request published, whatever slug it names, re-filed (idempotent);
        and the author's counter moves for exactly one of them.
        """
        claim = await self.keys.claim(draft.author, "publishPost", client_key, draft.slug)
        if not claim.first:
            existing = (await self.get_many([claim.result])).get(claim.result)
            if existing is not None and existing.author == draft.author:
                await self._file(existing)
                if await self.keys.take_count(claim):
                    await self._count_post(existing.author)
                return Published(existing, created=False)
        return await self.publish(draft, claim)

    async def publish(self, draft: PostDraft, key_claim: KeyClaim | None = None) -> Published | None:
        """Claim the slug, count the post, file it in its timelines; None when the slug is taken.

        The claim is ``INSERT ... IF NOT EXISTS``: of any number of concurrent
        publishers of one slug, exactly one wins. A failed claim returns the row
        that holds the slug; when that row is this very draft (same author,
        title, body and tags) the publish is a retry, typically after an
        ``UNAVAILABLE`` that struck after the claim, and it files the post again
        (the filing writes are idempotent) instead of failing: that is how a
        post whose filing never landed heals. Only the winner of the claim moves
        the author's post counter, so retries never count a post twice; under an
        idempotency key (``key_claim``) the one request of the key that takes the
        count moves it, so a winner that died before counting is made up for.
        """
        item_id = new_timeuuid()
        claim = await self.db.execute(
            "INSERT INTO posts (slug, id, author, title, body, tags, published_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
            (
                draft.slug,
                item_id,
                draft.author,
                draft.title,
                draft.body,
                list(draft.tags),
                time_of(item_id),
            ),
        )
        if claim.applied:
            post = PostRecord(
                id=item_id,
                slug=draft.slug,
                author=draft.author,
                title=draft.title,
                tags=draft.tags,
                body=draft.body,
            )
            outcomes = await asyncio.gather(
                self._count_post(post.author, key_claim), self._file(post), return_exceptions=True
            )
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome
            return Published(post, created=True)
        holder = claim.one()
        if holder is None or holder.get("id") is None:
            return None
        existing = PostRecord.from_row(holder)
        if not existing.same_content_as(draft):
            return None
        await self._file(existing)
        if key_claim is not None and await self.keys.take_count(key_claim):
            await self._count_post(existing.author)
        return Published(existing, created=False)

    async def _count_post(self, author: str, claim: KeyClaim | None = None) -> None:
        """One more post of ``author``; under a key, only if no other request of it counted."""
        if claim is not None and not await self.keys.take_count(claim):
            return
        await self.db.execute("UPDATE post_counts SET posts = posts + 1 WHERE author = ?", (author,))

    async def _file(self, post: PostRecord) -> None:
        """File the post under each of its tags, under "all posts" and under its author.

        One LOGGED batch, on purpose: these rows live in up to 26 partitions of
        five tables. Cassandra writes a logged batch to its batchlog before
        applying it, so once the batch is accepted every row lands, even if the
        coordinator dies halfway; separate (or unlogged) writes could leave a
        post listed under "all posts" but missing from its tag or its author's
        list for good. The batch is idempotent (the same keys and values each
        time), so a retry may safely send it again. At most ~16 KB (10 tags of
        200-character titles), under Cassandra's 50 KB batch limit.

        The author's row goes both to the bucketed list and to the unbucketed
        ``posts_by_author`` that gateways of the previous release read.
        """
        bucket = bucket_of_timeuuid(post.id, self.granularity)
        tags = list(post.tags)
        statements: list[tuple[str, Params]] = []
        for tag in (ALL_POSTS, *post.tags):
            statements.append(_TAG_TIMELINE.add_bucket((tag,), bucket))
            statements.append(
                (
                    "INSERT INTO posts_by_tag (tag, bucket, id, slug, title, author, tags)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (tag, bucket, post.id, post.slug, post.title, post.author, tags),
                )
            )
        author_bucket = bucket_of_timeuuid(post.id, self.author_granularity)
        statements.append(AUTHOR_TIMELINE.add_bucket((post.author,), author_bucket))
        statements.append(author_row(post, author_bucket))
        statements.append(
            (
                "INSERT INTO posts_by_author (author, id, slug, title, tags) VALUES (?, ?, ?, ?, ?)",
                (post.author, post.id, post.slug, post.title, tags),
            )
        )
        await self.db.batch(statements, logged=True)

    # -- reading ------------------------------------------------------------

    async def get_many(self, slugs: Iterable[str]) -> dict[str, PostRecord]:
        """Posts by slug: one ``IN`` read per 100 distinct slugs."""
        rows = await self.db.select_in(f"SELECT {_POST_COLUMNS} FROM posts WHERE slug IN ?", slugs)
        return {row["slug"]: PostRecord.from_row(row) for row in rows if row["id"] is not None}

    async def timeline(
        self, tag: str, *, size: int, cursor: Position | None, backward: bool = False
    ) -> Paged[PostSummary]:
        """The posts filed under ``tag`` (``ALL_POSTS`` for all), newest first, across buckets."""
        return await _TAG_TIMELINE.read(
            self.db,
            (tag,),
            lambda row: _summary(row, row["author"]),
            size=size,
            cursor=cursor,
            backward=backward,
        )

    async def by_author(
        self, author: str, *, size: int, cursor: Position | None, backward: bool = False
    ) -> Paged[PostSummary]:
        """An author's posts, newest first, across the author's buckets."""
        return await AUTHOR_TIMELINE.read(
            self.db, (author,), lambda row: _summary(row, author), size=size, cursor=cursor, backward=backward
        )

    def author_position(self, post_id: UUID) -> Position:
        """Where ``post_id`` sits in its author's list (a cursor that carries only the id)."""
        return Position(bucket_of_timeuuid(post_id, self.author_granularity), post_id)

    async def post_counts(self, authors: Iterable[str]) -> dict[str, int]:
        """``User.postCount`` of many authors: one ``IN`` read per 100."""
        rows = await self.db.select_in("SELECT author, posts FROM post_counts WHERE author IN ?", authors)
        return {row["author"]: int(row["posts"] or 0) for row in rows}

    async def recount_author(self, author: str) -> tuple[int, int]:
        """Move ``post_counts`` to the number of posts filed under ``author``; (before, after).

        The counter is incremented apart from the post's filing (counters cannot
        join a logged batch), so a lost increment leaves ``postCount`` short.
        Like comment recounts, run it while the author is not publishing; for
        maintenance commands only. One count per bucket: no statement reads more
        than one bucket's partition.
        """
        stored = 0
        for bucket in await AUTHOR_TIMELINE.buckets(self.db, (author,)):
            result = await self.db.execute(
                "SELECT COUNT(*) AS n FROM posts_by_author_bucket WHERE author = ? AND bucket = ?",
                (author, bucket),
            )
            stored += int(result.rows[0]["n"])
        before = (await self.post_counts([author])).get(author, 0)
        if stored != before:
            await self.db.execute(
                "UPDATE post_counts SET posts = posts + ? WHERE author = ?", (stored - before, author)
            )
        return before, stored

    async def all_posts(self) -> list[tuple[str, str]]:
        """(slug, author) of every post: a full scan, for maintenance commands only."""
        rows = await self.db.execute_all("SELECT slug, author FROM posts", fetch_size=1000)
        return [(row["slug"], row["author"]) for row in rows if row["author"] is not None]


def author_row(post: PostSummary, bucket: int) -> tuple[str, Params]:
    """The idempotent write of ``post``'s row in its author's bucketed list."""
    return (
        "INSERT INTO posts_by_author_bucket (author, bucket, id, slug, title, tags)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (post.author, bucket, post.id, post.slug, post.title, list(post.tags)),
    )


def _summary(row: Row, author: str) -> PostSummary:
    return PostSummary(
        id=row["id"], slug=row["slug"], author=author, title=row["title"] or "", tags=tuple(row["tags"] or ())
    )
