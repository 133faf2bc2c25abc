"""``gateway blog-recount [slug ...]``: repair comment and post counters after lost increments."""

from __future__ import annotations

from gateway.blog.comment_store import CommentStore
from gateway.blog.store import PostStore
from gateway.db.session import Database
from gateway.settings import Settings


async def recount(db: Database, settings: Settings, slugs: list[str]) -> int:
    """Recount the named posts (every post when none is named) and their authors."""
    posts = PostStore(db, settings)
    comments = CommentStore(db, settings)
    known = await posts.all_posts()
    if slugs:
        wanted = set(slugs)
        missing = wanted - {slug for slug, _ in known}
        if missing:
            print(f"no post with slug: {', '.join(sorted(missing))}")
            return 2
        known = [(slug, author) for slug, author in known if slug in wanted]
    for slug, _ in sorted(known):
        before, after = await comments.recount(slug)
        change = "" if before == after else f"  (was {before})"
        print(f"post {slug}: {after} comments{change}")
    for author in sorted({author for _, author in known}):
        before, after = await posts.recount_author(author)
        change = "" if before == after else f"  (was {before})"
        print(f"author {author}: {after} posts{change}")
    return 0
