"""Blog paging: newest-first tag and "all posts" pages, oldest-first comments, across time buckets."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.blog import COMMENTS, POSTS, all_pages, comment, publish, unique_tag
from tests.support.client import Api

AUTHOR_POSTS = """query($login: String!, $first: Int, $after: String) {
  user(login: $login) { posts(first: $first, after: $after) {
    edges { cursor node { slug } } pageInfo { hasNextPage endCursor } } }
}"""


async def test_tag_and_all_posts_pages_newest_first_two_at_a_time(api: Api) -> None:
    author = await api.sign_up("pager")
    tag = unique_tag()
    slugs = [(await publish(api, author.token, tags=[tag]))["slug"] for _ in range(7)]
    newest_first = slugs[::-1]

    by_tag = await all_pages(api, POSTS, {"tag": tag, "first": 2}, ["posts"])
    assert by_tag == newest_first  # no gap, no repeat, hasNextPage false at the end

    # "All posts" holds other tests' posts too: ours are the newest, in order, each once.
    everything: list[str] = []
    after = None
    while not set(slugs) <= set(everything):
        page = (await api.ok(POSTS, {"first": 2, "after": after}))["posts"]
        assert page["edges"], "ran out of posts before finding ours"
        everything += [edge["node"]["slug"] for edge in page["edges"]]
        after = page["pageInfo"]["endCursor"]
    assert len(everything) == len(set(everything))
    assert [s for s in everything if s in slugs] == newest_first


async def test_pages_are_stable_while_new_posts_arrive(api: Api) -> None:
    author = await api.sign_up("stable")
    tag = unique_tag()
    old = [(await publish(api, author.token, tags=[tag]))["slug"] for _ in range(4)]
    first_page = (await api.ok(POSTS, {"tag": tag, "first": 2}))["posts"]
    assert [e["node"]["slug"] for e in first_page["edges"]] == old[:1:-1]
    newer = (await publish(api, author.token, tags=[tag]))["slug"]
    after = first_page["pageInfo"]["endCursor"]
    second_page = await api.ok(POSTS, {"tag": tag, "first": 2, "after": after})
    assert [e["node"]["slug"] for e in second_page["posts"]["edges"]] == old[1::-1]
    assert second_page["posts"]["pageInfo"]["hasNextPage"] is False
    fresh = (await api.ok(POSTS, {"tag": tag, "first": 1}))["posts"]
    assert [e["node"]["slug"] for e in fresh["edges"]] == [newer]


async def test_author_posts_page_newest_first(api: Api) -> None:
    author = await api.sign_up("authpages")
    slugs = [(await publish(api, author.token))["slug"] for _ in range(5)]
    seen = await all_pages(api, AUTHOR_POSTS, {"login": author.login, "first": 2}, ["user", "posts"])
    assert seen == slugs[::-1]


async def test_first_zero_reports_whether_there_is_more(api: Api) -> None:
    author = await api.sign_up("zero")
    tag = unique_tag()
    await publish(api, author.token, tags=[tag])
    page = (await api.ok(POSTS, {"tag": tag, "first": 0}))["posts"]
    assert page == {"edges": [], "pageInfo": {"hasNextPage": True, "endCursor": None}}


async def _spread_over_buckets(count: int, make: Any, pause: float = 0.45) -> list[Any]:
    """Create ``count`` items ``pause`` seconds apart: with 1-second buckets they span several."""
    made = []
    for i in range(count):
        if i:
            await asyncio.sleep(pause)
        made.append(await make())
    return made


async def test_pages_cross_time_buckets_without_gap_or_repeat(make_server: Any, base_settings: Any) -> None:
    """With 1-second buckets a tag, "all posts" and a thread each span several
    partitions; paging walks them through the bucket index seamlessly.

    Bucket numbers of different granularities do not interleave in time order,
    so a granularity is fixed for a keyspace's life: this gateway gets a
    keyspace of its own (dropped afterwards) rather than mixing 1-second
    buckets into the shared "all posts" timeline.
    """
    from gateway.db.migrations import drop_keyspace
    from gateway.server.app import SERVICES

    keyspace = f"{base_settings.keyspace}_b"
    small, small_app = await make_server(keyspace=keyspace, blog_post_bucket="1s", blog_comment_bucket="1s")
    db = small_app[SERVICES].db
    try:
        await _walk_buckets(small, db)
    finally:
        await asyncio.to_thread(drop_keyspace, db, keyspace)


async def _walk_buckets(small: Api, db: Any) -> None:
    author = await small.sign_up("buckets")
    tag = unique_tag()
    posts = await _spread_over_buckets(7, lambda: publish(small, author.token, tags=[tag]))
    slugs = [p["slug"] for p in posts]

    post_buckets = await db.execute("SELECT bucket FROM post_buckets_by_tag WHERE tag = ?", (tag,))
    assert len(post_buckets.rows) >= 3

    for size in (1, 2, 3, 10):
        assert await all_pages(small, POSTS, {"tag": tag, "first": size}, ["posts"]) == slugs[::-1]
        assert await all_pages(small, POSTS, {"first": size}, ["posts"]) == slugs[::-1]

    thread = slugs[0]
    comments = await _spread_over_buckets(7, lambda: comment(small, thread))
    comment_buckets = await db.execute("SELECT bucket FROM comment_buckets WHERE slug = ?", (thread,))
    assert len(comment_buckets.rows) >= 3
    for size in (1, 2, 3, 10):
        seen = await all_pages(small, COMMENTS, {"slug": thread, "first": size}, ["post", "comments"])
        assert seen == [c["id"] for c in comments]
    assert (await small.ok(COMMENTS, {"slug": thread}))["post"]["commentCount"] == 7
