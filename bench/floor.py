"""The floor under any GraphQL layer on this stack: two reads answered without GraphQL.

``python -m bench.floor [--port 8009]`` serves ``POST /graphql`` on 127.0.0.1 as the gateway
would be served (aiohttp on uvloop, orjson), but answers only two documents, matched by
their text, by calling the gateway's own stores directly and writing the JSON by hand:

- the blog front page of ``bench/bench_blog.py`` (``FRONT_PAGE``, the peers' ``front``):
  the posts timeline, then the authors and the comment counts read together, as
  ``Post.list_of`` reads them: the same four statements on the same I/O path;
- ``{ user(login: "...") { login firstname } }`` (``bench/bench_users.py``): one statement.

Its ``data`` is byte-identical to the gateway's (``compare.sh check`` with it as a target).
Anything else is a 400. No parsing, validation, execution, extensions, context, limits,
metrics or logs: what is left is HTTP, the driver and the stores, which a GraphQL layer on
aiohttp and this driver cannot do without. Served beside the gateway and the peers
(``compare.sh load --target floor=http://127.0.0.1:8009@PID``), it tells which goals a
faster GraphQL layer could still reach and which are under what the stack itself costs
(``bench/NOTES.md``, "The floor").
"""

from __future__ import annotations

import argparse
import asyncio
import re
from dataclasses import replace
from typing import Any

import orjson
import uvloop
from aiohttp import web

from bench.bench_blog import FRONT_PAGE
from gateway.blog.comment_store import CommentStore
from gateway.blog.store import ALL_POSTS, PostStore
from gateway.db.session import Database, RequestMetrics, measuring
from gateway.graph.pagination import position_cursor
from gateway.graph.scalars import serialize_datetime
from gateway.http.compression import compress_responses
from gateway.settings import Settings
from gateway.users.store import UserStore

USER_BY_LOGIN = re.compile(r'\{ user\(login: "([a-z0-9_.-]+)"\) \{ login firstname \} \}')


class Stores:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.posts = PostStore(db, settings)
        self.comments = CommentStore(db, settings)
        self.users = UserStore(db, settings)


STORES = web.AppKey("stores", Stores)
#: Whether answers carry ``extensions.cql`` as the gateway's do with ``GATEWAY_QUERY_METRICS``.
METRICS = web.AppKey("metrics", bool)


async def front_page(stores: Stores) -> dict[str, Any]:
    page = await stores.posts.timeline(ALL_POSTS, size=10, cursor=None)
    summaries = [summary for _, summary in page.items]
    slugs = [summary.slug for summary in summaries]
    counts, users = await asyncio.gather(
        stores.comments.counts(slugs), stores.users.get_many({s.author for s in summaries})
    )
    edges = []
    for position, summary in page.items:
        author = users.get(summary.author)
        edges.append(
            {
                "cursor": position_cursor(position),
                "node": {
                    "slug": summary.slug,
                    "title": summary.title,
                    "tags": list(summary.tags),
                    "publishedAt": serialize_datetime(summary.published_at),
                    "commentCount": counts.get(summary.slug, 0),
                    "author": None
                    if author is None
                    else {"login": author.login, "firstname": author.firstname, "lastname": author.lastname},
                },
            }
        )
    return {"posts": {"edges": edges}}


async def user(stores: Stores, login: str) -> dict[str, Any]:
    record = (await stores.users.get_many([login])).get(login)
    return {"user": None if record is None else {"login": record.login, "firstname": record.firstname}}


async def graphql(request: web.Request) -> web.Response:
    body = orjson.loads(await request.read())
    query = body.get("query") if isinstance(body, dict) else None
    stores = request.app[STORES]
    with measuring(RequestMetrics()) as metrics:
        if query == FRONT_PAGE:
            data = await front_page(stores)
        elif isinstance(query, str) and (match := USER_BY_LOGIN.fullmatch(query)):
            data = await user(stores, match.group(1))
        else:
            return web.Response(status=400, text="only the front page and user(login)")
    answer: dict[str, Any] = {"data": data}
    if request.app[METRICS]:
        answer["extensions"] = {"cql": {"statements": metrics.statements, "lwtRetries": metrics.lwt_retries}}
    return web.Response(body=orjson.dumps(answer), content_type="application/json")


async def ready(request: web.Request) -> web.Response:
    return web.Response(text="ready")


def app(settings: Settings) -> web.Application:
    """Compressed as the gateway compresses (``gateway.http.compression``): a client that
    accepts brotli gets the front page's 2.7 KB as the gateway sends them."""
    application = web.Application(middlewares=[compress_responses])
    application.router.add_post("/graphql", graphql)
    application.router.add_get("/readyz", ready)
    application[METRICS] = settings.query_metrics

    async def database(application: web.Application) -> Any:
        db = Database(settings)
        await db.open()
        db.use_keyspace(settings.keyspace)
        application[STORES] = Stores(db, settings)
        yield
        await asyncio.to_thread(db.shutdown)

    application.cleanup_ctx.append(database)
    return application


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8009)
    parser.add_argument("--keyspace", help="the keyspace to read (default: GATEWAY_KEYSPACE's)")
    parser.add_argument("--metrics", action="store_true", help="answer extensions.cql as the gateway does")
    args = parser.parse_args()
    settings = replace(Settings.from_env(), host="127.0.0.1", port=args.port)
    if args.keyspace:
        settings = replace(settings, keyspace=args.keyspace)
    if args.metrics:
        settings = replace(settings, query_metrics=True)
    web.run_app(
        app(settings),
        host=settings.host,
        port=settings.port,
        loop=uvloop.new_event_loop(),
        print=None,
        access_log=None,
    )


if __name__ == "__main__":
    main()
