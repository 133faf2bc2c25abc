"""An author's posts (``User.posts``) across time buckets: paging, cursors from before the
buckets, statement counts, and the backfill of lists written before the buckets."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from uuid import UUID

from aiohttp import web

from gateway.db.clock import new_timeuuid
from gateway.server.app import SERVICES
from tests.support.blog import all_pages, publish, unique_slug
from tests.support.cli import run_cli
from tests.support.client import Api

AUTHOR_POSTS = """query($login: String!, $first: Int, $after: String) {
  user(login: $login) { posts(first: $first, after: $after) {
    edges { cursor node { slug title tags } } pageInfo { hasNextPage endCursor } } }
}"""


def _legacy_cursor(post_id: UUID) -> str:
    """The cursor ``User.posts`` issued before the author's list was bucketed."""
    raw = json.dumps({"i": str(post_id)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _id_in(year: int, n: int) -> UUID:
    at = datetime(year, 3, 1 + n, 12, tzinfo=UTC)
    return new_timeuuid(int(at.timestamp()) * 1_000_000_000)


async def _page(api: Api, login: str, first: int, after: str | None = None) -> tuple[list[str], str | None]:
    data = await api.ok(AUTHOR_POSTS, {"login": login, "first": first, "after": after})
    connection = data["user"]["posts"]
    slugs = [edge["node"]["slug"] for edge in connection["edges"]]
    return slugs, connection["pageInfo"]["endCursor"] if connection["pageInfo"]["hasNextPage"] else None


async def test_backfill_files_old_lists_in_year_buckets(api: Api, app: web.Application) -> None:
    """Rows written the old way (one partition per author) are invisible until the
    backfill files them; then paging walks four year buckets without gap or repeat."""
    author = await api.sign_up("oldauthor")
    db = app[SERVICES].db
    written: list[tuple[UUID, str]] = []
    for year in (2019, 2020, 2021, 2022):
        for n in range(3):
            post_id, slug = _id_in(year, n), unique_slug("old")
            await db.execute(
                "INSERT INTO posts_by_author (author, id, slug, title, tags) VALUES (?, ?, ?, ?, ?)",
                (author.login, post_id, slug, f"Old {slug}", ["legacy"]),
            )
            written.append((post_id, slug))
    newest_first = [slug for _, slug in written[::-1]]
    assert (await _page(api, author.login, 5))[0] == []

    settings = app[SERVICES].settings
    for _ in range(2):  # idempotent
        status, output = await run_cli(settings, "backfill", "blog")
        assert status == 0, output
        assert "blog:" in output
    buckets = await db.execute("SELECT bucket FROM post_buckets_by_author WHERE author = ?", (author.login,))
    assert [row["bucket"] for row in buckets.rows] == [2022, 2021, 2020, 2019]

    for size in (1, 2, 5, 50):
        seen = await all_pages(api, AUTHOR_POSTS, {"login": author.login, "first": size}, ["user", "posts"])
        assert seen == newest_first
    data = await api.ok(AUTHOR_POSTS, {"login": author.login, "first": 1})
    node = data["user"]["posts"]["edges"][0]["node"]
    assert node == {"slug": newest_first[0], "title": f"Old {newest_first[0]}", "tags": ["legacy"]}

    # A post published now lands on top, in the new list and in the old one.
    fresh = await publish(api, author.token)
    assert (await _page(api, author.login, 1))[0] == [fresh["slug"]]
    old_table = await db.execute("SELECT slug FROM posts_by_author WHERE author = ? LIMIT 1", (author.login,))
    assert old_table.rows[0]["slug"] == fresh["slug"]


async def test_cursors_from_before_the_buckets_still_page(api: Api, app: web.Application) -> None:
    author = await api.sign_up("legacycur")
    slugs = [(await publish(api, author.token))["slug"] for _ in range(5)]
    db = app[SERVICES].db
    newest = await db.execute("SELECT id FROM posts_by_author WHERE author = ? LIMIT 5", (author.login,))
    ids = [row["id"] for row in newest.rows]
    assert len(ids) == 5
    rest, _ = await _page(api, author.login, 10, _legacy_cursor(ids[2]))
    assert rest == slugs[::-1][3:]


async def test_pages_of_an_author_cost_the_same_for_2_or_50_posts(api: Api) -> None:
    author = await api.sign_up("authcost")
    slugs = [(await publish(api, author.token))["slug"] for _ in range(7)]
    small = await api.call(AUTHOR_POSTS, {"login": author.login, "first": 2})
    large = await api.call(AUTHOR_POSTS, {"login": author.login, "first": 50})
    assert not small.errors and not large.errors
    assert large.data is not None
    assert [e["node"]["slug"] for e in large.data["user"]["posts"]["edges"]] == slugs[::-1]
    # the user + the bucket index + one bucket slice
    assert small.statements == large.statements == 3

    seen: list[str] = []
    after = None
    costs = set()
    while True:
        response = await api.call(AUTHOR_POSTS, {"login": author.login, "first": 2, "after": after})
        assert response.data is not None
        connection = response.data["user"]["posts"]
        seen += [e["node"]["slug"] for e in connection["edges"]]
        costs.add(response.statements)
        if not connection["pageInfo"]["hasNextPage"]:
            break
        after = connection["pageInfo"]["endCursor"]
    assert seen == slugs[::-1]  # four pages, no gap, no repeat
    # Later pages: the user + the rest of the cursor's bucket, and the index past it
    # only when that bucket ran short (the last page).
    assert costs == {2, 3}
