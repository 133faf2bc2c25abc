"""Fill the bucketed author lists from ``posts_by_author`` (``gateway backfill blog``).

Keyspaces created before authors' lists were bucketed hold them only in
``posts_by_author``. This walks that table once, page by page (a full-table
read: an operator's command, never a request), and files each row in its
author's bucket of ``posts_by_author_bucket`` and the bucket in
``post_buckets_by_author``: the rows of one (author, bucket) in a page go in
single-partition unlogged batches of at most ``BATCH_ROWS`` (~15 KB, under
Cassandra's batch size limit), their index row beside them, with a bounded
number of writes in flight.

Idempotent: posts are never edited, so a second run writes the same cells
again. Run it once every gateway files posts in the bucketed lists (after the
upgrade); until then an author's list shows only the posts published since.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from gateway.blog.records import PostSummary
from gateway.blog.store import AUTHOR_TIMELINE, author_row
from gateway.db.concurrency import InFlightLimit
from gateway.db.session import Database, Params, Result, chunked
from gateway.db.timeline import bucket_of_timeuuid, validate_granularity
from gateway.settings import Settings

PAGE_SIZE = 500
MAX_IN_FLIGHT = 16
BATCH_ROWS = 50

_SCAN = "SELECT author, id, slug, title, tags FROM posts_by_author"


@dataclass(frozen=True)
class BackfillReport:
    posts: int
    buckets: int


async def backfill(db: Database, settings: Settings) -> str:
    """The ``gateway backfill blog`` command: the work and its one-line summary."""
    report = await backfill_blog(db, settings)
    return f"{report.posts} posts filed in {report.buckets} author buckets"


async def backfill_blog(
    db: Database, settings: Settings, *, page_size: int = PAGE_SIZE, max_in_flight: int = MAX_IN_FLIGHT
) -> BackfillReport:
    granularity = validate_granularity(settings.blog_author_bucket)
    limit = InFlightLimit(max_in_flight)
    posts = 0
    buckets: set[tuple[str, int]] = set()
    async for page in db.pages(_SCAN, fetch_size=page_size):
        by_partition: dict[tuple[str, int], list[tuple[str, Params]]] = defaultdict(list)
        for row in page:
            post = PostSummary(
                id=row["id"],
                slug=row["slug"],
                author=row["author"],
                title=row["title"] or "",
                tags=tuple(row["tags"] or ()),
            )
            bucket = bucket_of_timeuuid(post.id, granularity)
            by_partition[(post.author, bucket)].append(author_row(post, bucket))
            posts += 1
        writes: list[Callable[[], Awaitable[Result]]] = []
        for (author, bucket), rows in by_partition.items():
            writes.extend(_batch(db, group) for group in chunked(rows, BATCH_ROWS))
            writes.append(_index(db, AUTHOR_TIMELINE.add_bucket((author,), bucket)))
        await limit.run_all(writes)
        buckets.update(by_partition)
    return BackfillReport(posts, len(buckets))


def _batch(db: Database, writes: Sequence[tuple[str, Params]]) -> Callable[[], Awaitable[Result]]:
    return lambda: db.batch(writes, logged=False)


def _index(db: Database, write: tuple[str, Params]) -> Callable[[], Awaitable[Result]]:
    return lambda: db.execute(*write)
