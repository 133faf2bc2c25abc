"""The floor under any GraphQL layer on this stack: the benchmarks' reads answered without GraphQL.

``python -m bench.floor [--port 8009]`` serves ``POST /graphql`` on 127.0.0.1 as the gateway is
served (aiohttp on uvloop, orjson, the gateway's compression), but answers only the documents
below, matched by their text, by calling the gateway's own stores as its resolvers do and
writing the JSON by hand:

- the blog front page of ``bench/bench_blog.py`` (``FRONT_PAGE``, the peers' ``front``): the
  posts timeline, then the authors and the comment counts read together, as ``Post.list_of``
  reads them;
- the conversation of ``bench/bench_messenger.py`` and the mailbox of ``bench/bench_mail.py``
  (the peers' ``conversation`` and ``mailbox``), for a bearer token, its session looked up
  through the gateway's ``SessionCache`` (no statement for a session it knows);
- ``{ user(login: "...") { login firstname } }`` (``bench/bench_users.py``).

Its ``data`` is byte-identical to the gateway's, from as many statements
(``tests/integration/test_bench_floor.py``; ``compare.sh check`` with it as a target). Anything
else is a 400. No parsing, validation, execution, extensions, context, limits, metrics or logs:
what is left is HTTP, the driver and the stores, which a GraphQL layer on aiohttp and this
driver cannot do without. Served beside the gateway and the peers (``compare.sh load --target
floor=http://127.0.0.1:8009@PID``), and as the ``floor:`` rows of ``scripts/bench``, it tells
which goals a faster GraphQL layer could still reach (``bench/NOTES.md``, "The floor").
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
from bench.bench_mail import MAILBOX
from bench.bench_messenger import CONVERSATION
from gateway.blog.comment_store import CommentStore
from gateway.blog.store import ALL_POSTS, PostStore
from gateway.db.session import Database, RequestMetrics, measuring
from gateway.graph.node import global_id
from gateway.graph.pagination import position_cursor
from gateway.graph.scalars import serialize_datetime
from gateway.http.auth import bearer_token
from gateway.http.compression import compress_responses
from gateway.mail.store import MailStore
from gateway.messenger.records import conversation_id
from gateway.messenger.store import MessengerStore
from gateway.settings import Settings
from gateway.users.records import UserRecord
from gateway.users.session_cache import SessionCache
from gateway.users.store import SessionStore, UserStore

REFUSED = "only the front page, user(login), and a signed-in conversation or mailbox"

USER_BY_LOGIN = re.compile(r'\{ user\(login: "([a-z0-9_.-]+)"\) \{ login firstname \} \}')


class Stores:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.posts = PostStore(db, settings)
        self.comments = CommentStore(db, settings)
        self.users = UserStore(db, settings)
        self.messenger = MessengerStore(db, settings)
        self.mail = MailStore(db, settings)
        #: The gateway's session cache: no statement for a session it knows. Trusted from the
        #: start: the floor serves no ``signOut`` and listens for no revocation.
        self.sessions = SessionCache(SessionStore(db, settings), settings)
        self.sessions.listening(True)

    async def viewer(self, request: web.Request) -> str | None:
        token = bearer_token(request.headers.get("Authorization"))
        return await self.sessions.login_of(token) if token else None


STORES = web.AppKey("stores", Stores)
#: Whether answers carry ``extensions.cql`` as the gateway's do with ``GATEWAY_QUERY_METRICS``.
METRICS = web.AppKey("metrics", bool)


def _person(user: UserRecord | None) -> dict[str, str] | None:
    """``{ login firstname lastname }`` of a user, as the front page and the mailbox select it."""
    if user is None:
        return None
    return {"login": user.login, "firstname": user.firstname, "lastname": user.lastname}


async def front_page(stores: Stores) -> dict[str, Any]:
    page = await stores.posts.timeline(ALL_POSTS, size=10, cursor=None)
    summaries = [summary for _, summary in page.items]
    slugs = [summary.slug for summary in summaries]
    counts, users = await asyncio.gather(
        stores.comments.counts(slugs), stores.users.get_many({s.author for s in summaries})
    )
    edges = [
        {
            "cursor": position_cursor(position),
            "node": {
                "slug": summary.slug,
                "title": summary.title,
                "tags": list(summary.tags),
                "publishedAt": serialize_datetime(summary.published_at),
                "commentCount": counts.get(summary.slug, 0),
                "author": _person(users.get(summary.author)),
            },
        }
        for position, summary in page.items
    ]
    return {"posts": {"edges": edges}}


async def conversation(stores: Stores, viewer: str, partner: str) -> dict[str, Any] | None:
    """As ``MessengerMe.conversation`` reads it: both users (the senders too), then the
    viewer's talk-partner row and the newest 50 messages together."""
    users = await stores.users.get_many([viewer, partner])
    if partner not in users:
        return None
    rows, page = await asyncio.gather(
        stores.messenger.partners_among(viewer, [partner]),
        stores.messenger.messages_page(conversation_id(viewer, partner), size=50, cursor=None),
    )
    edges = [
        {
            "cursor": position_cursor(position),
            "node": {
                "id": global_id("DirectMessage", record.conversation_id, str(record.id)),
                "content": record.content,
                "sentAt": serialize_datetime(record.sent_at),
                "sender": {"login": users[record.sender].login},
            },
        }
        for position, record in page.items
    ]
    return {"me": {"conversation": {"unreadCount": rows[partner].unread, "messages": {"edges": edges}}}}


async def mailbox(stores: Stores, owner: str) -> dict[str, Any]:
    """As ``MailMe.folders`` and ``folder(label: "inbox")`` read them: the folders, the unread
    counters (one read for both fields) and the inbox's newest 20, then their senders."""
    folders, counts, page = await asyncio.gather(
        stores.mail.folders(owner),
        stores.mail.unread_counts(owner),
        stores.mail.folder_page(owner, "inbox", size=20, cursor=None),
    )
    senders = await stores.users.get_many({entry.sender for _, entry in page.items})
    edges = [
        {
            "cursor": position_cursor(position),
            "node": {
                "id": global_id("EmailSummary", owner, "inbox", str(entry.id)),
                "subject": entry.subject,
                "sentAt": serialize_datetime(entry.sent_at),
                "read": entry.read,
                "hasAttachments": entry.has_attachments,
                "from": _person(senders.get(entry.sender)),
            },
        }
        for position, entry in page.items
    ]
    page_info = {"hasNextPage": page.more, "endCursor": edges[-1]["cursor"] if edges else None}
    return {
        "me": {
            "folders": [
                {"label": f.label, "color": f.color, "unreadCount": max(0, counts.get(f.label, 0))}
                for f in folders
            ],
            "folder": {"emails": {"edges": edges, "pageInfo": page_info}},
        }
    }


async def user(stores: Stores, login: str) -> dict[str, Any]:
    record = (await stores.users.get_many([login])).get(login)
    return {"user": None if record is None else {"login": record.login, "firstname": record.firstname}}


async def graphql(request: web.Request) -> web.Response:
    body = orjson.loads(await request.read())
    query = body.get("query") if isinstance(body, dict) else None
    stores = request.app[STORES]
    with measuring(RequestMetrics()) as metrics:
        data: dict[str, Any] | None = None
        if query == FRONT_PAGE:
            data = await front_page(stores)
        elif isinstance(query, str) and (match := USER_BY_LOGIN.fullmatch(query)):
            data = await user(stores, match.group(1))
        elif query in (CONVERSATION, MAILBOX) and (viewer := await stores.viewer(request)) is not None:
            if query == MAILBOX:
                data = await mailbox(stores, viewer)
            else:
                partner = (body.get("variables") or {}).get("with")
                if isinstance(partner, str):
                    data = await conversation(stores, viewer, partner)
        if data is None:
            return web.Response(status=400, text=REFUSED)
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
