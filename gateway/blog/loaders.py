"""Batched blog reads: a page of N posts costs one read per kind of data, not N."""

from __future__ import annotations

from gateway.blog.comment_store import CommentStore
from gateway.blog.records import PostRecord
from gateway.blog.store import PostStore
from gateway.db.session import IN_CHUNK
from gateway.graph.context import Context
from gateway.graph.dataloader import Loader


def post_loader(context: Context) -> Loader[str, PostRecord | None]:
    """Posts by slug (``post(slug)``, and a list's ``body``)."""
    store = context.store(PostStore)

    async def load(slugs: list[str]) -> list[PostRecord | None]:
        found = await store.get_many(slugs)
        return [found.get(slug) for slug in slugs]

    return Loader(load_fn=load, max_batch_size=IN_CHUNK)


def comment_count_loader(context: Context) -> Loader[str, int]:
    """``Post.commentCount`` by slug; a post nobody commented on counts 0."""
    store = context.store(CommentStore)

    async def load(slugs: list[str]) -> list[int]:
        counts = await store.counts(slugs)
        return [counts.get(slug, 0) for slug in slugs]

    return Loader(load_fn=load, max_batch_size=IN_CHUNK)


def post_count_loader(context: Context) -> Loader[str, int]:
    """``User.postCount`` by login; a user who never published counts 0."""
    store = context.store(PostStore)

    async def load(logins: list[str]) -> list[int]:
        counts = await store.post_counts(logins)
        return [counts.get(login, 0) for login in logins]

    return Loader(load_fn=load, max_batch_size=IN_CHUNK)
