"""The blog's types, queries and mutations."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from datetime import datetime
from typing import Any

import strawberry
from strawberry.types import Info

from gateway.blog import rules
from gateway.blog.comment_store import CommentRecord, CommentStore
from gateway.blog.cursors import author_position, timeline_position
from gateway.blog.loaders import comment_count_loader, post_count_loader, post_loader
from gateway.blog.store import ALL_POSTS, PostDraft, PostRecord, PostStore, PostSummary
from gateway.errors import Conflict, NotFound
from gateway.graph.context import context_of
from gateway.graph.cost import max_items, text_bound
from gateway.graph.node import Node, global_id
from gateway.graph.pagination import Connection, page_size, position_cursor
from gateway.graph.plain_fields import NOT_READ, plain_reader, source_field
from gateway.graph.selection import selects
from gateway.ratelimit.policy import Limit
from gateway.users.types import User, require_user, users_by_login

POSTS_PAGE = 10
AUTHOR_POSTS_PAGE = 10
COMMENTS_PAGE = 50


def _known(value: Any) -> Any:
    """The value a post was built with, or NOT_READ when it was not prefetched: what its
    fields' resolvers answer with first, and their plain reader."""
    return NOT_READ if value is None else value


@strawberry.type(description="A comment on a post. The commenter's email is stored, never shown.")
class Comment:
    """Fields are read from the stored comment when the query selects them, and resolve
    on the plain-fields path."""

    _record: strawberry.Private[CommentRecord]
    id: strawberry.ID = source_field("_record.id", str, description="A time-based UUID.")
    commenter_name: str = source_field("_record.name")
    text: str = source_field("_record.text", metadata=text_bound(rules.COMMENT_MAX))
    posted_at: datetime = source_field("_record.posted_at")

    @classmethod
    def of(cls, record: CommentRecord) -> Comment:
        return cls(_record=record)


@strawberry.type(description="A blog post, addressed by its slug.")
class Post(Node):
    """What the record says is filled at construction (plain attributes resolve on
    Strawberry's fast path); a list also hands each post the authors, comment
    counts and bodies its query selects, loaded once for the whole page."""

    slug: str
    title: str
    tags: list[str] = strawberry.field(
        description="Lower-case, in the order the author gave them.", metadata=max_items(rules.TAGS_MAX)
    )
    published_at: datetime
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
        metadata={**plain_reader(lambda p: _known(p._body)), **text_bound(rules.BODY_MAX)},
    )
    def body(self, info: Info) -> str | Awaitable[str]:
        known = _known(self._body)
        return self._load_body(info) if known is NOT_READ else known

    async def _load_body(self, info: Info) -> str:
        record = await context_of(info).loader(post_loader).load(self.slug)
        self._body = record.body if record else ""
        return self._body

    @strawberry.field(graphql_type=User, metadata=plain_reader(lambda p: _known(p._author_user)))
    def author(self, info: Info) -> User | Awaitable[User]:
        known = _known(self._author_user)
        return require_user(info, self._author) if known is NOT_READ else known

    @strawberry.field(graphql_type=int, metadata=plain_reader(lambda p: _known(p._comment_count)))
    def comment_count(self, info: Info) -> int | Awaitable[int]:
        known = _known(self._comment_count)
        return context_of(info).loader(comment_count_loader).load(self.slug) if known is NOT_READ else known

    @strawberry.field(description="Oldest first.")
    async def comments(
        self, info: Info, first: int | None = COMMENTS_PAGE, after: str | None = None
    ) -> Connection[Comment]:
        size = page_size(info, first, COMMENTS_PAGE)
        position = timeline_position(after)
        page = await context_of(info).store(CommentStore).page(self.slug, first=size, after=position)
        return Connection.of(
            [(position_cursor(pos), Comment.of(record)) for pos, record in page.items], page.has_next
        )


@strawberry.input(description="A new post. Tags are stored lower-case, duplicates dropped.")
class PostInput:
    slug: str = strawberry.field(description="[a-z0-9]+(-[a-z0-9]+)*, at most 100 characters.")
    title: str = strawberry.field(description="1-200 characters.")
    body: str = strawberry.field(description="At most 100 000 characters.")
    tags: list[str] = strawberry.field(
        default_factory=list, description="At most 10, each 1-30 of [a-z0-9-]."
    )
    client_mutation_id: str | None = strawberry.field(
        default=None,
        description="An idempotency key you generate (a UUID): a retry with the same key publishes "
        "nothing twice and returns the first post.",
    )


@strawberry.input(description="A comment. Commenters do not sign in; the email is never shown.")
class CommentInput:
    name: str = strawberry.field(description="1-100 characters.")
    email: str
    text: str = strawberry.field(description="1-4000 characters after trimming.")
    client_mutation_id: str | None = strawberry.field(
        default=None,
        description="An idempotency key you generate (a UUID): a retry with the same key on the same "
        "post stores no second comment and returns the first.",
    )


async def post_node(info: Info, slug: str) -> Post | None:
    """A post by slug, None when there is none (``post`` and ``node``)."""
    if not rules.is_slug(slug):
        return None
    record = await context_of(info).loader(post_loader).load(slug)
    return Post.of(record) if record else None


@strawberry.type
class BlogQuery:
    @strawberry.field(description="A post by slug; null when there is none.")
    async def post(self, info: Info, slug: str) -> Post | None:
        return await post_node(info, slug)

    @strawberry.field(description="Posts newest first: those tagged `tag`, or all posts without one.")
    async def posts(
        self,
        info: Info,
        tag: str | None = None,
        first: int | None = POSTS_PAGE,
        after: str | None = None,
    ) -> Connection[Post]:
        timeline = ALL_POSTS if tag is None else rules.tag(tag, "tag")
        size = page_size(info, first, POSTS_PAGE)
        position = timeline_position(after)
        page = await context_of(info).store(PostStore).timeline(timeline, first=size, after=position)
        posts = await Post.list_of(info, [summary for _, summary in page.items])
        return Connection.of(
            [(position_cursor(pos), post) for (pos, _), post in zip(page.items, posts, strict=True)],
            page.has_next,
        )


@strawberry.type
class BlogMutation:
    @strawberry.mutation(
        description="Publish a post as yourself. CONFLICT when the slug is taken; repeating your "
        "own identical publish (a retry) returns the post."
    )
    async def publish_post(self, info: Info, input: PostInput) -> Post:
        context = context_of(info)
        client_key = context.idempotency_key(info, input.client_mutation_id)
        author = await context.require_viewer()
        draft = PostDraft(
            slug=rules.slug(input.slug),
            author=author,
            title=rules.title(input.title),
            body=rules.body(input.body),
            tags=tuple(rules.tags(input.tags)),
        )
        posts = context.store(PostStore)
        published = await (
            posts.publish(draft) if client_key is None else posts.publish_keyed(draft, client_key)
        )
        if published is None:
            raise Conflict(f"The slug '{draft.slug}' is taken.", field="slug")
        return Post.of(published.post)

    @strawberry.mutation(description="Comment on a post; no sign-in needed. NOT_FOUND for a missing post.")
    async def add_comment(self, info: Info, slug: str, input: CommentInput) -> Comment:
        context = context_of(info)
        client_key = context.idempotency_key(info, input.client_mutation_id)
        key = rules.slug(slug)
        name = rules.commenter_name(input.name)
        email = rules.commenter_email(input.email)
        text = rules.comment_text(input.text)
        await context.rate_limit(Limit.COMMENT)
        if await context.loader(post_loader).load(key) is None:
            raise NotFound(f"No post '{key}'.")
        record = await context.store(CommentStore).add(
            key, name=name, email=email, text=text, client_key=client_key
        )
        return Comment.of(record)


@strawberry.type
class BlogUser:
    """``User.postCount`` and ``User.posts``, joined onto ``User`` at the composition root."""

    login: strawberry.Private[str]

    @strawberry.field(description="How many posts this user has published.")
    async def post_count(self, info: Info) -> int:
        return await context_of(info).loader(post_count_loader).load(self.login)

    @strawberry.field(description="This user's posts, newest first.")
    async def posts(
        self, info: Info, first: int | None = AUTHOR_POSTS_PAGE, after: str | None = None
    ) -> Connection[Post]:
        size = page_size(info, first, AUTHOR_POSTS_PAGE)
        store = context_of(info).store(PostStore)
        position = author_position(after, store.author_position)
        page = await store.by_author(self.login, first=size, after=position)
        nodes = await Post.list_of(info, [summary for _, summary in page.items])
        return Connection.of(
            [(position_cursor(pos), node) for (pos, _), node in zip(page.items, nodes, strict=True)],
            page.has_next,
        )
