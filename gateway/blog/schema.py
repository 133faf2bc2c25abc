"""The blog's root fields: ``Query.post`` and ``Query.posts``, ``User.posts`` and
``User.postCount``, publishing and commenting with their inputs.
"""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.types import Info

from gateway.blog import rules
from gateway.blog.comment_store import CommentStore
from gateway.blog.cursors import author_position, timeline_position
from gateway.blog.loaders import post_count_loader, post_loader
from gateway.blog.records import PostDraft
from gateway.blog.store import ALL_POSTS, PostStore
from gateway.blog.types import Comment, Post, post_node
from gateway.errors import Conflict, NotFound
from gateway.graph.context import context_of
from gateway.graph.pagination import After, Before, Connection, First, Last, page_request, position_cursor
from gateway.ratelimit.policy import Limit

POSTS_PAGE = 10
AUTHOR_POSTS_PAGE = 10


@strawberry.input(description="A new post. Tags are stored lower-case, duplicates dropped.")
class PostInput:
    slug: str = strawberry.field(
        description="The post's address, unique: lower-case words of letters and digits joined by single "
        "hyphens (`my-first-post`), at most 100 characters. CONFLICT when taken."
    )
    title: str = strawberry.field(description="1-200 characters after trimming.")
    body: str = strawberry.field(
        description="At most 100 000 characters, kept exactly as written; may be empty."
    )
    tags: list[str] = strawberry.field(
        default_factory=list,
        description="At most 10, each 1-30 letters, digits or hyphens after trimming; stored lower-case.",
    )
    client_mutation_id: str | None = strawberry.field(
        default=None,
        description="An idempotency key you generate (a UUID; at most 100 characters): a retry with the "
        "same key publishes nothing twice and returns the first post.",
    )


@strawberry.input(description="A comment. Commenters do not sign in; the email is never shown.")
class CommentInput:
    name: str = strawberry.field(
        description="The name shown with the comment (`commenterName`): 1-100 characters after trimming."
    )
    email: str = strawberry.field(description="The commenter's email address: stored, never shown to anyone.")
    text: str = strawberry.field(description="1-4000 characters after trimming.")
    client_mutation_id: str | None = strawberry.field(
        default=None,
        description="An idempotency key you generate (a UUID; at most 100 characters): a retry with the "
        "same key on the same post stores no second comment and returns the first.",
    )


@strawberry.type
class BlogQuery:
    @strawberry.field(description="A post by slug; null when there is none.")
    async def post(
        self, info: Info, slug: Annotated[str, strawberry.argument(description="The post's slug, exactly.")]
    ) -> Post | None:
        return await post_node(info, slug)

    @strawberry.field(description="Posts newest first: those tagged `tag`, or all posts without one.")
    async def posts(
        self,
        info: Info,
        tag: Annotated[
            str | None,
            strawberry.argument(
                description="Only posts with this tag (any case: tags are lower-case); "
                "BAD_USER_INPUT when it cannot be a tag. Null: every post."
            ),
        ] = None,
        first: First = POSTS_PAGE,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Post]:
        timeline = ALL_POSTS if tag is None else rules.tag(tag, "tag")
        request = page_request(info, first, after, last, before, POSTS_PAGE)
        position = timeline_position(request.cursor, request.cursor_field)
        page = (
            await context_of(info)
            .store(PostStore)
            .timeline(timeline, size=request.size, cursor=position, backward=request.backward)
        )
        posts = await Post.list_of(info, [summary for _, summary in page.items])
        edges = [(position_cursor(pos), post) for (pos, _), post in zip(page.items, posts, strict=True)]
        return Connection.paged(request, edges, page.more, page.beyond)


@strawberry.type
class BlogMutation:
    @strawberry.mutation(
        description="Publish a post as yourself: it heads the front page, its tags' lists and yours. "
        "CONFLICT when the slug is taken; repeating your own identical publish (a retry) returns the post."
    )
    async def publish_post(
        self,
        info: Info,
        input: Annotated[PostInput, strawberry.argument(description="Its slug, title, body and tags.")],
    ) -> Post:
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

    @strawberry.mutation(
        description="Comment on a post; no sign-in needed. NOT_FOUND for a missing post. Rate limited "
        "per client address."
    )
    async def add_comment(
        self,
        info: Info,
        slug: Annotated[str, strawberry.argument(description="The slug of the post to comment on.")],
        input: Annotated[CommentInput, strawberry.argument(description="Your name, email and text.")],
    ) -> Comment:
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
        self,
        info: Info,
        first: First = AUTHOR_POSTS_PAGE,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Post]:
        request = page_request(info, first, after, last, before, AUTHOR_POSTS_PAGE)
        store = context_of(info).store(PostStore)
        position = author_position(request.cursor, store.author_position, request.cursor_field)
        page = await store.by_author(
            self.login, size=request.size, cursor=position, backward=request.backward
        )
        nodes = await Post.list_of(info, [summary for _, summary in page.items])
        edges = [(position_cursor(pos), node) for (pos, _), node in zip(page.items, nodes, strict=True)]
        return Connection.paged(request, edges, page.more, page.beyond)
