"""The blog's fields on ``User``: ``postCount`` and ``posts``.

A mixin of ``User`` (see ``gateway/users/schema.py``). It must not import
``gateway.users.schema`` or ``gateway.blog.schema`` at module level (the latter
imports the former): the ``Post`` type is referenced lazily and the blog's
helpers are imported inside the resolvers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.types import Info

from gateway.blog.cursors import author_cursor, author_position
from gateway.blog.loaders import post_count_loader
from gateway.blog.store import PostStore
from gateway.graph.context import context_of
from gateway.graph.pagination import Connection, page_size

if TYPE_CHECKING:
    from gateway.blog.schema import Post

LazyPost = Annotated["Post", strawberry.lazy("gateway.blog.schema")]

AUTHOR_POSTS_PAGE = 10


@strawberry.type
class BlogUserFields:
    @strawberry.field(description="How many posts this user has published.")
    async def post_count(self, info: Info) -> int:
        return await context_of(info).loader(post_count_loader).load(self.login)  # type: ignore[attr-defined]

    @strawberry.field(description="This user's posts, newest first.")
    async def posts(
        self, info: Info, first: int | None = AUTHOR_POSTS_PAGE, after: str | None = None
    ) -> Connection[LazyPost]:
        from gateway.blog.schema import Post

        size = page_size(info, first, AUTHOR_POSTS_PAGE)
        past = author_position(after)
        login: str = self.login  # type: ignore[attr-defined]
        posts, has_next = await context_of(info).store(PostStore).by_author(login, first=size, after=past)
        nodes = await Post.list_of(info, posts)
        return Connection.of(
            [(author_cursor(post.id), node) for post, node in zip(posts, nodes, strict=True)], has_next
        )
