"""Blog under concurrency and partial failure: one slug winner, exact counts, healing retries."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.blog import (
    ADD_COMMENT,
    COMMENTS,
    POST,
    POSTS,
    PUBLISH,
    all_pages,
    comment_input,
    post_input,
    publish,
    unique_slug,
    unique_tag,
)
from tests.support.client import Api

POST_COUNT = "query($l: String!) { user(login: $l) { postCount } }"
AUTHOR_SLUGS = """query($login: String!, $first: Int, $after: String) {
  user(login: $login) { posts(first: $first, after: $after) {
    edges { cursor node { slug } } pageInfo { hasNextPage endCursor } } }
}"""


async def post_count(api: Api, login: str) -> int:
    return int((await api.ok(POST_COUNT, {"l": login}))["user"]["postCount"])


async def test_concurrent_publishes_of_one_slug_have_one_winner(api: Api) -> None:
    slug = unique_slug("race")
    tag = unique_tag()
    racers = [await api.sign_up(f"racer{i}") for i in range(20)]
    responses = await asyncio.gather(
        *(
            api.call(PUBLISH, post_input(slug, title=f"By racer {i}", tags=[tag]), token=racer.token)
            for i, racer in enumerate(racers)
        )
    )
    winners = [(racer, r) for racer, r in zip(racers, responses, strict=True) if not r.errors]
    losers = [r for r in responses if r.errors]
    assert len(winners) == 1
    assert len(losers) == 19
    assert all(r.codes == ["CONFLICT"] for r in losers)
    assert all(r.errors[0]["extensions"]["field"] == "slug" for r in losers)

    winner, response = winners[0]
    assert response.data is not None
    post = (await api.ok(POST, {"slug": slug}))["post"]
    assert post["author"]["login"] == winner.login
    assert post["title"] == response.data["publishPost"]["title"]
    assert await all_pages(api, POSTS, {"tag": tag, "first": 5}, ["posts"]) == [slug]
    counts = await asyncio.gather(*(post_count(api, racer.login) for racer in racers))
    assert sorted(counts) == [0] * 19 + [1]


async def test_repeating_your_own_publish_is_a_harmless_retry(api: Api) -> None:
    author = await api.sign_up("retry")
    tag = unique_tag()
    slug = unique_slug("retry")
    first = await publish(api, author.token, slug, tags=[tag])
    again = await publish(api, author.token, slug, tags=[tag])
    assert again == first  # same post, same publishedAt
    assert await post_count(api, author.login) == 1
    assert await all_pages(api, POSTS, {"tag": tag, "first": 5}, ["posts"]) == [slug]

    # The same slug with anything else changed is someone else's slug.
    edited = post_input(slug, title="Another title", tags=[tag])
    changed = await api.error(PUBLISH, edited, token=author.token)
    assert changed["extensions"] == {"code": "CONFLICT", "field": "slug"}
    other = await api.sign_up("thief")
    stolen = await api.error(PUBLISH, post_input(slug, tags=[tag]), token=other.token)
    assert stolen["extensions"] == {"code": "CONFLICT", "field": "slug"}
    assert (await api.ok(POST, {"slug": slug}))["post"]["author"]["login"] == author.login


async def test_a_post_whose_filing_never_landed_heals_when_its_author_retries(api: Api, app: Any) -> None:
    """The state after a publish whose slug claim and count landed but whose
    filing batch did not (the client got UNAVAILABLE): readable by slug, absent
    from every list. The author's retry files it, without counting it twice."""
    from gateway.db.clock import new_timeuuid as new_id
    from gateway.db.clock import time_of
    from gateway.server.app import SERVICES

    author = await api.sign_up("heal")
    slug = unique_slug("half")
    tag = unique_tag()
    db = app[SERVICES].db
    post_id = new_id()
    await db.execute(
        "INSERT INTO posts (slug, id, author, title, body, tags, published_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
        (slug, post_id, author.login, f"Title of {slug}", f"Body of {slug}", [tag], time_of(post_id)),
    )
    await db.execute("UPDATE post_counts SET posts = posts + 1 WHERE author = ?", (author.login,))

    stored = (await api.ok(POST, {"slug": slug}))["post"]
    assert stored is not None
    assert (await api.ok(POSTS, {"tag": tag}))["posts"]["edges"] == []
    assert await all_pages(api, AUTHOR_SLUGS, {"login": author.login}, ["user", "posts"]) == []

    healed = await publish(api, author.token, slug, tags=[tag])
    assert healed["publishedAt"] == stored["publishedAt"]  # the original post, not a new one
    assert await all_pages(api, POSTS, {"tag": tag}, ["posts"]) == [slug]
    assert await all_pages(api, AUTHOR_SLUGS, {"login": author.login}, ["user", "posts"]) == [slug]
    newest = (await api.ok(POSTS, {"first": 100}))["posts"]["edges"]
    assert slug in [e["node"]["slug"] for e in newest]
    assert await post_count(api, author.login) == 1


async def test_post_count_is_exact_after_concurrent_publishes(api: Api) -> None:
    author = await api.sign_up("prolific")
    slugs = [unique_slug("many") for _ in range(25)]
    responses = await asyncio.gather(
        *(api.call(PUBLISH, post_input(slug), token=author.token) for slug in slugs)
    )
    assert all(not r.errors for r in responses), [r.errors for r in responses if r.errors]
    assert await post_count(api, author.login) == 25
    listed = await all_pages(api, AUTHOR_SLUGS, {"login": author.login, "first": 10}, ["user", "posts"])
    assert sorted(listed) == sorted(slugs)


async def test_comment_count_is_exact_after_concurrent_comments(api: Api) -> None:
    author = await api.sign_up("popular")
    post = await publish(api, author.token)
    responses = await asyncio.gather(
        *(
            api.call(ADD_COMMENT, {"slug": post["slug"], "input": comment_input(text=f"comment {i}")})
            for i in range(60)
        )
    )
    assert all(not r.errors for r in responses), [r.errors for r in responses if r.errors]
    ids = {r.data["addComment"]["id"] for r in responses if r.data}
    assert len(ids) == 60
    data = (await api.ok(COMMENTS, {"slug": post["slug"], "first": 100}))["post"]
    assert data["commentCount"] == 60
    listed = [edge["node"]["id"] for edge in data["comments"]["edges"]]
    assert set(listed) == ids
    times = [edge["node"]["postedAt"] for edge in data["comments"]["edges"]]
    assert times == sorted(times)  # oldest first


async def test_demo_blog_seeds_once(app: Any, api: Api) -> None:
    from gateway.blog.seed import DEMO_POSTS, seed_blog
    from gateway.seed import seed_demo
    from gateway.server.app import SERVICES

    services = app[SERVICES]
    await seed_demo(services.db, services.settings)
    assert await seed_blog(services.db, services.settings) == []  # idempotent
    for slug, author, title, _body, tags, thread in DEMO_POSTS:
        post = (await api.ok(COMMENTS, {"slug": slug}))["post"]
        assert post["commentCount"] == len(thread)
        assert [e["node"]["commenterName"] for e in post["comments"]["edges"]] == [c[0] for c in thread]
        detail = (await api.ok(POST, {"slug": slug}))["post"]
        assert detail["author"]["login"] == author
        assert detail["title"] == title
        assert detail["tags"] == list(tags)


async def test_a_burst_of_identical_publishes_makes_one_post_counted_once(api: Api) -> None:
    """A double-clicked (or retried-in-flight) publish: every copy gets the one post."""
    author = await api.sign_up("clicky")
    slug = unique_slug("twice")
    tag = unique_tag()
    responses = await asyncio.gather(
        *(api.call(PUBLISH, post_input(slug, tags=[tag]), token=author.token) for _ in range(10))
    )
    assert all(not r.errors for r in responses), [r.errors for r in responses if r.errors]
    published = {r.data["publishPost"]["publishedAt"] for r in responses if r.data}
    assert len(published) == 1
    assert await post_count(api, author.login) == 1
    assert await all_pages(api, POSTS, {"tag": tag}, ["posts"]) == [slug]
