"""Counter drift after lost increments, healed by ``gateway blog-recount``."""

from __future__ import annotations

from aiohttp import web

from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.support.blog import POST, comment, publish
from tests.support.cli import run_cli
from tests.support.client import Api

COUNTS = """query($slug: String!, $login: String!) {
  post(slug: $slug) { commentCount }
  user(login: $login) { postCount }
}"""


async def test_recount_heals_comment_and_post_counts(
    api: Api, app: web.Application, base_settings: Settings
) -> None:
    author = await api.sign_up("brc")
    first = (await publish(api, author.token))["slug"]
    second = (await publish(api, author.token))["slug"]
    for _ in range(3):
        await comment(api, first)
    db = app[SERVICES].db
    # Increments that were lost, and one that landed twice.
    await db.execute("UPDATE comment_counts SET comments = comments - 2 WHERE slug = ?", (first,))
    await db.execute("UPDATE post_counts SET posts = posts + 1 WHERE author = ?", (author.login,))
    drifted = await api.ok(COUNTS, {"slug": first, "login": author.login})
    assert drifted == {"post": {"commentCount": 1}, "user": {"postCount": 3}}

    code, output = await run_cli(base_settings, "blog-recount", first, second)
    assert code == 0, output
    assert f"post {first}: 3 comments  (was 1)" in output
    assert f"post {second}: 0 comments" in output
    assert f"author {author.login}: 2 posts  (was 3)" in output
    healed = await api.ok(COUNTS, {"slug": first, "login": author.login})
    assert healed == {"post": {"commentCount": 3}, "user": {"postCount": 2}}

    code, output = await run_cli(base_settings, "blog-recount", first)
    assert code == 0 and "was" not in output, output
    assert (await api.ok(POST, {"slug": first}))["post"]["commentCount"] == 3
    code, output = await run_cli(base_settings, "blog-recount", "no-such-post-here")
    assert code == 2 and "no-such-post-here" in output
