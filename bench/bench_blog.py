"""Blog: the front page and a post page with 50 comments, beside the same reads on the driver.

Run: ``/tmp/venv-blog/bin/python -m bench.bench_blog``.

The driver rows issue the same CQL as the gateway (through the stores), with
the batched lookups run concurrently, so the gap between a gateway row and its
driver row is what GraphQL parsing, validation, resolvers and HTTP cost.
"""

from __future__ import annotations

import asyncio
import uuid

from bench.harness import (
    Target,
    counted,
    floor_read,
    floor_under_test,
    gateway_under_test,
    report,
    side_by_side,
)
from gateway.blog.comment_store import CommentStore
from gateway.blog.records import PostDraft
from gateway.blog.store import ALL_POSTS, PostStore
from gateway.users.store import UserStore

REQUESTS = 2000
WRITES = 500
CONCURRENCY = 32
AUTHORS = 10
POSTS_PER_AUTHOR = 3
THREAD = "bench-thread"

FRONT_PAGE = """{ posts(first: 10) { edges { cursor node {
  slug title tags publishedAt commentCount author { login firstname lastname } } } } }"""
POST_PAGE = """query($slug: String!) { post(slug: $slug) {
  slug title body tags publishedAt commentCount author { login firstname lastname }
  comments(first: 50) { edges { cursor node { id commenterName text postedAt } } } } }"""
PUBLISH = """mutation($input: PostInput!) { publishPost(input: $input) { slug publishedAt } }"""
ADD_COMMENT = """mutation($slug: String!, $input: CommentInput!) {
  addComment(slug: $slug, input: $input) { id postedAt } }"""


async def _seed(target: Target) -> list[str]:
    """10 authors with 3 posts each (2 tags, a few comments), one post with 50 comments."""
    tokens = [await target.sign_up(f"writer{i}") for i in range(AUTHORS)]
    for round_ in range(POSTS_PER_AUTHOR):
        for i, token in enumerate(tokens):
            slug = f"post-{round_}-{i}"
            await target.graphql(
                PUBLISH,
                {
                    "input": {
                        "slug": slug,
                        "title": f"Post {round_}/{i}",
                        "body": "Lorem ipsum. " * 200,
                        "tags": ["cassandra", f"topic-{i % 3}"],
                    }
                },
                token=token,
            )
            for c in range(i % 4):
                await target.graphql(ADD_COMMENT, {"slug": slug, "input": _comment(c)})
    await target.graphql(
        PUBLISH,
        {"input": {"slug": THREAD, "title": "A busy thread", "body": "Discuss.", "tags": ["cassandra"]}},
        token=tokens[0],
    )
    for c in range(50):
        await target.graphql(ADD_COMMENT, {"slug": THREAD, "input": _comment(c)})
    return tokens


def _slug(prefix: str, i: int) -> str:
    """A fresh slug per call (warm-up calls have negative indexes)."""
    return f"{prefix}-{'w' if i < 0 else 'n'}{abs(i)}"


def _draft(prefix: str, i: int) -> PostDraft:
    return PostDraft(_slug(prefix, i), f"writer{i % AUTHORS}", "Bench", "Body", ("cassandra", "bench"))


def _comment(n: int) -> dict[str, str]:
    return {"name": f"Reader {n}", "email": f"reader{n}@example.com", "text": f"Comment number {n}. " * 5}


async def _front_page_raw(posts: PostStore, comments: CommentStore, users: UserStore) -> None:
    page = await posts.timeline(ALL_POSTS, size=10, cursor=None)
    summaries = [summary for _, summary in page.items]
    await asyncio.gather(
        users.get_many(s.author for s in summaries), comments.counts(s.slug for s in summaries)
    )


async def _post_page_raw(posts: PostStore, comments: CommentStore, users: UserStore) -> None:
    found = await posts.get_many([THREAD])
    post = found[THREAD]
    await asyncio.gather(
        users.get_many([post.author]),
        comments.counts([THREAD]),
        comments.page(THREAD, size=50, cursor=None),
    )


async def main() -> None:
    async with gateway_under_test() as target, floor_under_test(target) as floor:
        tokens = await _seed(target)
        posts = PostStore(target.db, target.settings)
        comments = CommentStore(target.db, target.settings)
        users = UserStore(target.db, target.settings)
        run = uuid.uuid4().hex[:8]

        reads = [
            *await side_by_side(
                ("gateway: posts(first: 10) + authors, counts", lambda _: target.graphql(FRONT_PAGE)),
                ("floor:   HTTP + the same stores, no GraphQL", lambda _: floor_read(floor, FRONT_PAGE)),
                (
                    "driver:  timeline page + users IN + counts IN",
                    lambda _: counted(_front_page_raw(posts, comments, users)),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            *await side_by_side(
                ("gateway: post(slug) + 50 comments", lambda _: target.graphql(POST_PAGE, {"slug": THREAD})),
                (
                    "driver:  post + user + count + comments page",
                    lambda _: counted(_post_page_raw(posts, comments, users)),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
        ]
        report(f"blog reads ({REQUESTS} requests, concurrency {CONCURRENCY})", reads)

        writes = [
            *await side_by_side(
                (
                    "gateway: publishPost (LWT + batch + counter)",
                    lambda i: target.graphql(
                        PUBLISH,
                        {
                            "input": {
                                "slug": _slug(f"gw-{run}", i),
                                "title": "Bench",
                                "body": "Body",
                                "tags": ["cassandra", "bench"],
                            }
                        },
                        token=tokens[i % AUTHORS],
                    ),
                ),
                ("driver:  PostStore.publish", lambda i: counted(posts.publish(_draft(f"drv-{run}", i)))),
                requests=WRITES,
                concurrency=CONCURRENCY,
            ),
            *await side_by_side(
                (
                    "gateway: addComment (batch + counter)",
                    lambda i: target.graphql(ADD_COMMENT, {"slug": THREAD, "input": _comment(i)}),
                ),
                (
                    "driver:  CommentStore.add",
                    lambda i: counted(
                        comments.add(THREAD, name="Reader", email="reader@example.com", text="Hello.")
                    ),
                ),
                requests=WRITES,
                concurrency=CONCURRENCY,
            ),
        ]
        report(f"blog writes ({WRITES} requests, concurrency {CONCURRENCY})", writes)


if __name__ == "__main__":
    asyncio.run(main())
