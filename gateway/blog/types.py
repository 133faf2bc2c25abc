"""The blog's object types: ``Post`` (with its comments) and ``Comment``; ``post_node``
finds a post by slug for ``Query.post`` and ``Query.node``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import strawberry
from strawberry.types import Info

from gateway.blog import rules
from gateway.blog.comment_store import CommentStore
from gateway.blog.cursors import timeline_position
from gateway.blog.loaders import comment_count_loader, post_loader
from gateway.blog.records import CommentRecord, PostRecord, PostSummary
from gateway.graph.context import context_of
from gateway.graph.cost import max_items, text_bound
from gateway.graph.node import ID_DESCRIPTION, Node, global_id
from gateway.graph.pagination import After, Before, Connection, First, Last, page_request, position_cursor
from gateway.graph.plain_fields import NOT_READ, computed_field, plain_reader, source_field
from gateway.graph.selection import selects
from gateway.users.types import User, require_user, users_by_login

COMMENTS_PAGE = 50


def _known(value: Any) -> Any:
    """The value a post was built with, or NOT_READ when it was not prefetched: what its
    fields' resolvers answer with first, and their plain reader."""
    return NOT_READ if value is None else value


def _comment_id(self: Comment) -> strawberry.ID:
    return global_id("Comment", self._record.slug, str(self._record.id))


@strawberry.type(description="A comment on a post. The commenter's email is stored, never shown.")
class Comment(Node):
    """Fields are read from the stored comment when the query selects them, and resolve
    on the plain-fields path."""

    _record: strawberry.Private[CommentRecord]
    id: strawberry.ID = computed_field(_comment_id, description=ID_DESCRIPTION)
    commenter_name: str = source_field(
        "_record.name", description="The name the commenter gave (1-100 characters); not a user's login."
    )
    text: str = source_field(
        "_record.text",
        description="What the commenter wrote: 1-4000 characters.",
        metadata=text_bound(rules.COMMENT_MAX),
    )
    posted_at: datetime = source_field("_record.posted_at", description="When it was posted.")

    @classmethod
    def of(cls, record: CommentRecord) -> Comment:
        return cls(_record=record)


@strawberry.type(description="A blog post, addressed by its slug.")
class Post(Node):
    """What the record says is filled at construction (plain attributes resolve on
    Strawberry's fast path); a list also hands each post the authors, comment
    counts and bodies its query selects, loaded once for the whole page."""

    slug: str = strawberry.field(
        description="The post's unique address: lower-case words joined by hyphens, at most 100 "
        "characters; `post(slug:)` finds it."
    )
    title: str = strawberry.field(description="The headline: 1-200 characters.")
    tags: list[str] = strawberry.field(
        description="Lower-case, in the order the author gave them.", metadata=max_items(rules.TAGS_MAX)
    )
    published_at: datetime = strawberry.field(description="When it was published; lists are ordered by it.")
    _author: strawberry.Private[str]
    #: None when the post came from a list, whose index rows do not carry bodies.
    _body: strawberry.Private[str | None]
    #: Prefetched by a list resolver; None: not prefetched.
    _author_user: strawberry.Private[User | None] = None
    _comment_count: strawberry.Private[int | None] = None

    @classmethod
    def of(
        cls,
        post: PostSummary,
        *,
        body: str | None = None,
        author: User | None = None,
        comment_count: int | None = None,
    ) -> Post:
        if body is None and isinstance(post, PostRecord):
            body = post.body
        return cls(
            id=global_id("Post", post.slug),
            slug=post.slug,
            title=post.title,
            tags=list(post.tags),
            published_at=post.published_at,
            _author=post.author,
            _body=body,
            _author_user=author,
            _comment_count=comment_count,
        )

    @classmethod
    async def list_of(cls, info: Info, summaries: Sequence[PostSummary]) -> list[Post]:
        """Posts of a list, with the authors, comment counts and bodies the query
        selects loaded in one batch each for the whole list."""
        if not summaries:
            return []
        context = context_of(info)
        slugs = [summary.slug for summary in summaries]
        # Loads are started before anything is awaited, so their reads run concurrently.
        counts: Awaitable[list[int]] | None = None
        records: Awaitable[list[PostRecord | None]] | None = None
        if selects(info, "commentCount"):
            counts = context.loader(comment_count_loader).load_many(slugs)
        if selects(info, "body"):
            records = context.loader(post_loader).load_many(slugs)
        authors: dict[str, User] = {}
        if selects(info, "author"):
            authors = await users_by_login(info, (summary.author for summary in summaries))
        count_of: dict[str, int] = {}
        body_of: dict[str, str] = {}
        if counts is not None:
            count_of = dict(zip(slugs, await counts, strict=True))
        if records is not None:
            body_of = {slug: r.body if r else "" for slug, r in zip(slugs, await records, strict=True)}
        return [
            cls.of(
                summary,
                body=body_of.get(summary.slug),
                author=authors.get(summary.author),
                comment_count=count_of.get(summary.slug),
            )
            for summary in summaries
        ]

    # The fields below return either the value the post was built with or an
    # awaitable (which graphql-core awaits), so a prefetched list needs no
    # awaitable per item.

    @strawberry.field(
        graphql_type=str,
        description="The text, exactly as the author wrote it: at most 100 000 characters.",
        metadata={**plain_reader(lambda p: _known(p._body)), **text_bound(rules.BODY_MAX)},
    )
    def body(self, info: Info) -> str | Awaitable[str]:
        known = _known(self._body)
        return self._load_body(info) if known is NOT_READ else known

    async def _load_body(self, info: Info) -> str:
        record = await context_of(info).loader(post_loader).load(self.slug)
        self._body = record.body if record else ""
        return self._body

    @strawberry.field(
        graphql_type=User,
        description="Who published it.",
        metadata=plain_reader(lambda p: _known(p._author_user)),
    )
    def author(self, info: Info) -> User | Awaitable[User]:
        known = _known(self._author_user)
        return require_user(info, self._author) if known is NOT_READ else known

    @strawberry.field(
        graphql_type=int,
        description="How many comments it has.",
        metadata=plain_reader(lambda p: _known(p._comment_count)),
    )
    def comment_count(self, info: Info) -> int | Awaitable[int]:
        known = _known(self._comment_count)
        return context_of(info).loader(comment_count_loader).load(self.slug) if known is NOT_READ else known

    @strawberry.field(description="Its comments, oldest first.")
    async def comments(
        self,
        info: Info,
        first: First = COMMENTS_PAGE,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Comment]:
        request = page_request(info, first, after, last, before, COMMENTS_PAGE)
        position = timeline_position(request.cursor, request.cursor_field)
        page = (
            await context_of(info)
            .store(CommentStore)
            .page(self.slug, size=request.size, cursor=position, backward=request.backward)
        )
        edges = [(position_cursor(pos), Comment.of(record)) for pos, record in page.items]
        return Connection.paged(request, edges, page.more, page.beyond)


async def post_node(info: Info, slug: str) -> Post | None:
    """A post by slug, None when there is none (``post`` and ``node``)."""
    if not rules.is_slug(slug):
        return None
    record = await context_of(info).loader(post_loader).load(slug)
    return Post.of(record) if record else None


async def comment_node(info: Info, slug: str, comment_id: str) -> Comment | None:
    """``node``'s lookup of a ``Comment`` global id (comments are public)."""
    try:
        key = UUID(comment_id)
    except ValueError:
        return None
    if key.version != 1 or not rules.is_slug(slug):
        return None
    record = await context_of(info).store(CommentStore).get(slug, key)
    return Comment.of(record) if record is not None else None
