"""What a request leaves for the cyclic garbage collector: nothing of its own.

A request's objects (its context, loaders, futures, records, executor) are freed
by reference counting when it is answered. Left in a reference cycle, they would
wait for a collection, and a collection's cost grows with what waits.
"""

from __future__ import annotations

import collections
import gc

import cassandra.metadata
import cassandra.util
import pytest
from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from cassandra.cluster import ResponseFuture

from gateway.graph.context import Context
from gateway.graph.dataloader import Loader
from gateway.graph.plain_fields import PlainFieldsExecutor
from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.conftest import ServerFactory
from tests.support.blog import comment, publish, unique_tag
from tests.support.client import Api
from tests.support.memory import cyclic_garbage

SERVER_SIDE = {"gateway", "strawberry", "cassandra"}
#: Not a page's: the driver's copy of the cluster's schema (rebuilt on any schema change,
#: by anyone), and aiohttp's connection handlers, the gateway's subclass included: a
#: WebSocket's request, writer and reader point back at its handler, a cycle of aiohttp's
#: own that a socket an earlier test closed leaves for the collector.
NOT_A_PAGES = (
    cassandra.metadata.KeyspaceMetadata,
    cassandra.metadata.TableMetadata,
    cassandra.metadata.ColumnMetadata,
    cassandra.metadata.IndexMetadata,
    cassandra.util.OrderedMapSerializedKey,
    RequestHandler,
)
PAGE = """query($tag: String) {
  posts(tag: $tag, first: 10) { edges { cursor node { slug title body commentCount
    author { login postCount } } } }
}"""


def of_other_sessions(garbage: list[object], session: object) -> set[int]:
    """The ids of the garbage that statements of other Cassandra sessions in this process
    left: on the driver's I/O thread (``CASSANDRA_IO=thread``) a request and its timer are a
    cycle, so another gateway's background work shows up while a test looks."""
    found = {id(o): o for o in garbage}
    pending = [o for o in garbage if isinstance(o, ResponseFuture) and o.session is not session]
    reached: set[int] = set()
    while pending:
        item = pending.pop()
        if id(item) in reached:
            continue
        reached.add(id(item))
        pending.extend(r for r in gc.get_referents(item) if id(r) in found and id(r) not in reached)
    return reached


@pytest.fixture
async def fast_server(
    server: tuple[Api, web.Application], base_settings: Settings, make_server: ServerFactory
) -> tuple[Api, web.Application]:
    """A gateway on its fast paths (the plain-field executor, reads on the loop's connections),
    which is what leaves no cycles: graphql-core's own executor holds its helpers in a cycle,
    and the driver's thread reactor keeps each request's timer in one. The suite's gateway
    when it runs them already; one of its own on the run over the reference paths."""
    fast = {"cassandra_io": "loop", "direct_reads": True, "plain_fields": True}
    if all(getattr(base_settings, name) == value for name, value in fast.items()):
        return server
    return await make_server(**fast)


async def test_a_page_of_posts_leaves_no_cycles_behind(fast_server: tuple[Api, web.Application]) -> None:
    api, app = fast_server
    tag = unique_tag()
    for n in range(3):
        author = await api.sign_up(f"heap{n}")
        post = await publish(api, author.token, tags=[tag])
        await comment(api, post["slug"])
    await api.ok(PAGE, {"tag": tag})  # prepared statements and caches in place

    with cyclic_garbage() as garbage:
        for _ in range(5):
            page = await api.ok(PAGE, {"tag": tag})
    assert len(page["posts"]["edges"]) == 3

    # The test's own client (gql, in this process) leaves cycles of its own: only the
    # gateway's side is looked at, its objects and those of the libraries it runs on.
    # (Classes are left out: the driver makes a class per parameterised CQL type it
    # decodes, such as list<text>, and a class is always a cycle with its own MRO.)
    others = of_other_sessions(garbage, app[SERVICES].db.session)
    ours = [
        o
        for o in garbage
        if type(o).__module__.split(".")[0] in SERVER_SIDE
        and not isinstance(o, type)
        and id(o) not in others
        and not isinstance(o, NOT_A_PAGES)
    ]
    kinds = collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in ours)
    assert not any(isinstance(o, Context | Loader | PlainFieldsExecutor) for o in ours), kinds
    assert not ours, kinds
