"""The plain-field fast path answers byte for byte what graphql-core's reference executor does.

Two gateways serve the same schema over the same keyspace, one executing with
``PlainFieldsExecutor`` and one with Strawberry's own executor, and every query
of a corpus is sent to both over HTTP; the response bodies must be identical
bytes, but for the random id an unexpected error names its request by. (The
bodies are compared as sent, so these calls use a raw HTTP client: a GraphQL
client would hand back parsed data, hiding order and form.)

The corpus covers the gateway's own hot operations with aliases, fragments,
``__typename`` and variables, and an edge schema whose plain attributes hold
what the fast path must leave to the executor: nulls in non-null positions,
exceptions, values a scalar or enum refuses, nulls inside lists, awaitables.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from enum import Enum
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
import strawberry
from aiohttp.test_utils import TestServer
from graphql import FragmentDefinitionNode, OperationDefinitionNode, parse
from strawberry.extensions import ParserCache
from strawberry.schema.config import StrawberryConfig

from gateway.graph.dataloader import Loader
from gateway.graph.errors import ErrorCodes, ErrorCodeSchema
from gateway.graph.plain_fields import NOT_READ, PlainFieldsExecutor, _variable_free, plain_reader
from gateway.graph.scalars import SCALAR_OVERRIDES
from gateway.messenger.types import Conversation, DirectMessage
from gateway.schema import build_schema
from gateway.server.app import READY, create_app
from gateway.settings import Settings
from tests.support.blog import comment, publish
from tests.support.client import Account, Api
from tests.support.mail_helpers import MARK
from tests.support.mail_helpers import send as send_email
from tests.support.rooms import POST, create_room


@strawberry.enum
class Mood(Enum):
    HAPPY = "happy"
    SAD = "sad"


async def _later(value: str) -> str:
    return value


@strawberry.type
class Item:
    name: str
    nickname: str | None
    count: int
    ratio: float
    flag: bool
    key: strawberry.ID
    at: datetime
    mood: Mood
    tags: list[str]
    maybe_tags: list[str | None] | None
    later: Any = strawberry.field(graphql_type=str | None)

    @strawberry.field
    def shout(self) -> str:
        return self.name.upper() if isinstance(self.name, str) else "?"


def _item(n: int, **odd: Any) -> Item:
    values: dict[str, Any] = {
        "name": f"item {n} é",
        "nickname": None if n % 2 else f"nick {n}",
        "count": n,
        "ratio": n / 3,
        "flag": bool(n % 2),
        "key": strawberry.ID(f"k{n}"),
        "at": datetime(2026, 1, 2, 3, 4, 5, 6000 * n),
        "mood": Mood.HAPPY if n % 2 else Mood.SAD,
        "tags": [f"t{n}", "common"],
        "maybe_tags": [None, f"m{n}"] if n % 2 else None,
        "later": None,
        **odd,
    }
    return Item(**values)


def _items() -> list[Item]:
    return [
        _item(0),
        _item(1, name=None),  # null in a non-null position
        _item(2, nickname=ValueError("nickname unavailable")),  # an exception as a value
        _item(3, count=2**40),  # outside Int
        _item(4, mood="grumpy"),  # not a Mood
        _item(5, tags=["a", None]),  # null inside a list of non-null items
        _item(6, tags="not a list"),
        _item(7, at=datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)),
        _item(8, ratio=float("nan")),
        _item(9, flag="yes"),
    ]


#: How often the resolver of a field with a plain reader ran (the fast path reads instead).
resolver_calls = {"holder": 0}


@strawberry.type
class Holder:
    login: str
    rank: int | None


@strawberry.interface
class Named:
    name: str


@strawberry.type
class Box(Named):
    """Implements an interface, so graphql-core checks every value with ``is_type_of``."""

    name: str
    size: int
    holder: Holder | None
    strict_holder: Holder
    contents: list[Item]
    maybe_contents: list[Item | None] | None
    inner: Box | None
    _prefetched: strawberry.Private[Any] = None

    def _read_holder(self) -> Any:
        return NOT_READ if self._prefetched is None else self._prefetched

    def _resolve_holder(self) -> Holder | None:
        resolver_calls["holder"] += 1
        return self._prefetched if self._prefetched is not None else Holder(login="loaded", rank=None)

    read_holder: Holder | None = strawberry.field(
        resolver=_resolve_holder, metadata=plain_reader(lambda box: box._read_holder())
    )


class _SubBox(Box):
    """A subclass the schema does not know: graphql-core takes it for a Box."""


def _inner_box(name: str, kind: type[Box] = Box) -> Box:
    return kind(
        name=name, size=0, holder=None, strict_holder=Holder(login="i", rank=1), contents=[],
        maybe_contents=None, inner=None,
    )  # fmt: skip


def _box(n: int, **odd: Any) -> Box:
    values: dict[str, Any] = {
        "name": f"box {n}",
        "size": n,
        "holder": Holder(login=f"h{n}", rank=n) if n % 2 else None,
        "strict_holder": Holder(login=f"s{n}", rank=None),
        "contents": [_item(0), _item(2)],
        "maybe_contents": [None, _item(4)] if n % 2 else None,
        "inner": Box(
            name=f"inner {n}",
            size=-n,
            holder=None,
            strict_holder=Holder(login="i", rank=1),
            contents=[],
            maybe_contents=None,
            inner=None,
        ),
        "_prefetched": Holder(login=f"pre{n}", rank=2) if n % 2 else None,
        **odd,
    }
    return Box(**values)


def _boxes() -> list[Box]:
    return [
        _box(0),
        _box(1),
        _box(2, strict_holder=None),  # null in a non-null object position
        _box(3, holder=Holder(login="h3", rank=2**40)),  # a leaf the scalar refuses, two levels down
        _box(4, contents=[_item(0), None]),  # null inside a list of non-null objects
        _box(5, inner=SimpleNamespace(name="impostor", size=0)),  # a Box's attributes, not a Box
        _box(6, holder=ValueError("holder unavailable")),  # an exception as an object value
        _box(7, contents=[_item(1, name=None)]),  # a null leaf inside a list's object
        _box(8, maybe_contents=(x for x in [_item(0)])),  # an iterable that is not a list
        _box(9, _prefetched=Holder(login="pre9", rank=2**40)),  # the reader's value fails a leaf
        _box(10, inner=strawberry.cast(Holder, _inner_box("cast"))),  # a Box cast to another type
        _box(11, inner=_inner_box("subclass", _SubBox)),  # an instance of a subclass
        _box(12, inner=strawberry.cast(Box, _inner_box("cast to itself"))),
    ]


@strawberry.type
class EdgeQuery:
    @strawberry.field
    def boxes(self) -> list[Box]:
        return _boxes()

    @strawberry.field
    def nullable_boxes(self) -> list[Box | None]:
        return list[Box | None](_boxes())

    @strawberry.field
    def clean_boxes(self) -> list[Box]:
        return [_box(0), _box(1)]

    @strawberry.field
    def items(self) -> list[Item | None]:
        return list[Item | None](_items())

    @strawberry.field
    def strict_items(self) -> list[Item]:
        return _items()[:2]

    @strawberry.field
    def clean(self) -> list[Item]:
        return [_item(0), _item(2), _item(4)]

    @strawberry.field
    def awaited(self) -> list[Item]:
        return [_item(0, later=_later("soon")), _item(1, name="named", later=None)]


def _edge_schema(plain: bool) -> strawberry.Schema:
    return ErrorCodeSchema(
        query=EdgeQuery,
        scalar_overrides=SCALAR_OVERRIDES,
        # As in the gateway's schema: one parsed document per query text, so the fast
        # path keeps its plans for the next request of the same document.
        extensions=[ErrorCodes, lambda: ParserCache(maxsize=100)],
        execution_context_class=PlainFieldsExecutor if plain else None,
        # As in the gateway's schema: @defer and @stream on, which leaves every document
        # without them to the fast path (test_object_subtrees_are_read_in_place).
        config=StrawberryConfig(enable_experimental_incremental_execution=True),
    )


ALL_ITEM_FIELDS = "name nickname count ratio flag key at mood tags maybeTags shout"

EDGE_CORPUS: list[tuple[str, dict[str, Any] | None]] = [
    (f"{{ items {{ {ALL_ITEM_FIELDS} }} }}", None),
    (f"{{ clean {{ {ALL_ITEM_FIELDS} __typename }} }}", None),
    ("{ strictItems { name count } }", None),
    ("{ strictItems { count } }", None),
    ("{ a: clean { n: name, again: name, c: count, __typename } b: items { t: __typename tags } }", None),
    (
        "query { clean { ...F ... on Item { count mood } shout } } fragment F on Item { name tags at }",
        None,
    ),
    ("query($s: Boolean!) { clean { name @skip(if: $s) count @include(if: $s) key } }", {"s": True}),
    ("query($s: Boolean!) { clean { name @skip(if: $s) count @include(if: $s) key } }", {"s": False}),
    ("{ __typename items { __typename } }", None),
    ("{ items { count } }", None),
    ("{ items { mood flag ratio } }", None),
    ("{ items { maybeTags nickname } }", None),
    ("{ awaited { name later count } }", None),
    ("{ clean { nickname } strictItems { nickname } }", None),
    (
        """{ cleanBoxes { name size holder { login rank } strictHolder { login __typename }
          contents { name count at tags } maybeContents { name mood } readHolder { login rank }
          inner { name size inner { name } holder { login } } __typename } }""",
        None,
    ),
    ("{ nullableBoxes { name strictHolder { login } } }", None),
    ("{ boxes { name strictHolder { login } } }", None),
    ("{ nullableBoxes { size holder { login rank } } }", None),
    ("{ nullableBoxes { contents { name count } } }", None),
    ("{ nullableBoxes { inner { name size } } }", None),
    ("{ nullableBoxes { maybeContents { name } readHolder { login rank } } }", None),
    (
        """query($s: Boolean!) { cleanBoxes { ...B h: holder { l: login r: rank }
          inner { ... on Named { name } ... on Box { size @skip(if: $s) } } } }
        fragment B on Box { name contents { ...I } } fragment I on Item { name tags }""",
        {"s": True},
    ),
    (
        """query($s: Boolean!) { cleanBoxes { ...B h: holder { l: login r: rank }
          inner { ... on Named { name } ... on Box { size @skip(if: $s) } } } }
        fragment B on Box { name contents { ...I } } fragment I on Item { name tags }""",
        {"s": False},
    ),
    ("{ cleanBoxes { holder { login } holder { rank } inner { holder { login } } } }", None),
    # A variable that changes which fields a plain subtree holds: plans are not kept.
    ("query($s: Boolean!) { cleanBoxes { name holder { login rank @include(if: $s) } } }", {"s": False}),
    ("query($s: Boolean!) { cleanBoxes { name holder { login rank @include(if: $s) } } }", {"s": True}),
    # Deferred and streamed: the same multipart parts from both executors.
    ('{ clean { name ... @defer(label: "rest") { count tags mood } } }', None),
    ("{ cleanBoxes { name ... @defer { holder { login rank } contents { name } } } }", None),
    ("{ items @stream(initialCount: 2) { name count } }", None),
    ("{ nullableBoxes { name ... @defer { strictHolder { login } } } }", None),
]


@contextlib.asynccontextmanager
async def _served(settings: Settings, schema: strawberry.Schema) -> AsyncIterator[str]:
    app = create_app(settings, schema=schema)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        await asyncio.wait_for(app[READY].wait(), timeout=120)
        yield str(server.make_url("/graphql"))
    finally:
        await server.close()


async def _body(
    http: aiohttp.ClientSession, url: str, query: str, variables: Any, token: str | None
) -> bytes:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # As Apollo Client asks for a document with @defer; one without it is answered as JSON.
    headers["Accept"] = "multipart/mixed;deferSpec=20220824, application/json"
    payload = {"query": query, "variables": variables}
    async with http.post(url, json=payload, headers=headers) as response:
        return await response.read()


#: Unexpected errors name their request (a random id per request): the one part that differs.
_REQUEST_ID = re.compile(rb"[0-9a-f]{32}")
#: In a document whose root fields load through one DataLoader (users, for posts' authors and
#: talk partners; participant counts, for two lists of rooms), whether their keys share a batch
#: depends on when each field's earlier reads answer: its statement count is left out of the
#: comparison, its data and errors are not.
_STATEMENTS = re.compile(rb'"statements":[0-9]+')


async def _differences(
    fast: str, reference: str, corpus: list[tuple[str, dict[str, Any] | None]], token: str | None = None
) -> list[tuple[str, bytes, bytes]]:
    differences = []
    async with aiohttp.ClientSession() as http:
        # The second round runs on the plans the first one left for each document.
        for query, variables in [*corpus, *corpus]:
            got = _REQUEST_ID.sub(b"<request id>", await _body(http, fast, query, variables, token))
            want = _REQUEST_ID.sub(b"<request id>", await _body(http, reference, query, variables, token))
            if query in SHARED_BATCHES:
                got, want = _STATEMENTS.sub(b"<statements>", got), _STATEMENTS.sub(b"<statements>", want)
            if got != want:
                differences.append((query, got, want))
    return differences


@pytest.mark.parametrize(
    ("document", "kept"),
    [
        ("{ clean { name @skip(if: true) count } }", True),
        ("query($s: Boolean!) { clean { name count } a: clean @include(if: $s) { key } }", False),
        ("query($s: Boolean!) { clean { ...F } } fragment F on Item { name @skip(if: $s) }", False),
        ("{ clean { ... @defer { name } } }", False),
        ("query Q($n: Int) { clean { name } }", True),
    ],
)
def test_plans_are_kept_across_requests_only_when_no_variable_can_change_the_fields(
    document: str, kept: bool
) -> None:
    parsed = parse(document)
    operation = next(d for d in parsed.definitions if isinstance(d, OperationDefinitionNode))
    fragments = {d.name.value: d for d in parsed.definitions if isinstance(d, FragmentDefinitionNode)}
    assert _variable_free(operation, fragments) is kept


async def test_edge_corpus_is_byte_identical(base_settings: Settings) -> None:
    async with (
        _served(base_settings, _edge_schema(plain=True)) as fast,
        _served(base_settings, _edge_schema(plain=False)) as reference,
    ):
        assert await _differences(fast, reference, EDGE_CORPUS) == []
        # The corpus reaches the cases it is for: errors inside lists, nulls propagated.
        async with aiohttp.ClientSession() as http:
            body = json.loads(await _body(http, fast, EDGE_CORPUS[0][0], None, None))
            strict = json.loads(await _body(http, fast, "{ strictItems { name count } }", None, None))
    messages = " ".join(error["message"] for error in body["errors"])
    paths = [error["path"] for error in body["errors"]]
    assert ["items", 1, "name"] in paths  # null in a non-null position (masked as unexpected)
    assert ["items", 2, "nickname"] in paths  # an exception as a value
    assert ["items", 5, "tags", 1] in paths  # null inside a list
    assert "Int cannot represent non 32-bit signed integer value" in messages
    assert body["data"]["items"][0]["name"] == "item 0 é"
    assert body["data"]["items"][1] is None
    assert strict["data"] is None


async def test_object_subtrees_are_read_in_place(base_settings: Settings) -> None:
    """A field with a plain reader is read, not resolved, when the reader knows its value;
    the boxes whose subtrees hold something odd are answered by the executor, errors and
    nulls in place."""
    query = "{ nullableBoxes { name readHolder { login } strictHolder { login } inner { size } } }"
    async with (
        _served(base_settings, _edge_schema(plain=True)) as fast,
        _served(base_settings, _edge_schema(plain=False)) as reference,
        aiohttp.ClientSession() as http,
    ):
        resolver_calls["holder"] = 0
        body = json.loads(await _body(http, fast, query, None, None))
        fast_calls = resolver_calls["holder"]
        resolver_calls["holder"] = 0
        await _body(http, reference, query, None, None)
        reference_calls = resolver_calls["holder"]
    assert reference_calls == len(_boxes()) == 13
    # Boxes with a prefetched holder (odd numbers) are read; the resolver runs for the even
    # ones, which have nothing prefetched.
    assert fast_calls == sum(box._prefetched is None for box in _boxes()) == 7
    boxes = body["data"]["nullableBoxes"]
    assert boxes[1] == {"name": "box 1", "readHolder": {"login": "pre1"}, "strictHolder": {"login": "s1"},
                        "inner": {"size": -1}}  # fmt: skip
    assert boxes[2] is None  # the null strict holder nulls its box
    assert boxes[5]["inner"] is None and boxes[5]["readHolder"] == {"login": "pre5"}  # not a Box
    assert boxes[10]["inner"] is None  # a Box cast to another type is not a Box
    assert boxes[11]["inner"] == boxes[12]["inner"] == {"size": 0}
    paths = sorted(error["path"] for error in body["errors"])
    assert paths == [
        ["nullableBoxes", 2, "strictHolder"], ["nullableBoxes", 5, "inner"], ["nullableBoxes", 10, "inner"],
    ]  # fmt: skip


POSTS_AND_PARTNERS = """{ posts(first: 10) { nodes { slug body commentCount author { login } } }
  me { talkPartners(first: 5) { nodes { partner { login } lastMessageSender { login }
  conversation { id } } } } }"""
ROOM_LISTS = """{ rooms(first: 20) { edges { cursor node { id name participantCount creator { login } } } }
  me { user { rooms(first: 5) { nodes { name participantCount } } } } }"""
SHARED_BATCHES = {POSTS_AND_PARTNERS, ROOM_LISTS}


def _domain_corpus(partner: str, room: str, slug: str) -> list[tuple[str, dict[str, Any] | None]]:
    return [
        (
            """query($after: String) { me { talkPartners(first: 50, after: $after) {
              edges { cursor node { partner { login firstname } lastMessage lastMessageAt unreadCount
              unreadSince } } pageInfo { hasNextPage endCursor } } } }""",
            {"after": None},
        ),
        (
            """{ me { talkPartners(first: 50) { nodes { id lastMessageId lastMessageSender { id login }
              conversation { id unreadCount unreadSince with { login } } } } } }""",
            None,
        ),
        (
            """query($with: String!) { me { conversation(with: $with) { unreadCount
              messages(first: 50) { edges { cursor node { id content sentAt sender { login } } } } } } }""",
            {"with": partner},
        ),
        (
            """query($with: String!) { me { conversation(with: $with) { messages(first: 3) {
              nodes { conversationId recipient { login } sentAt __typename id clientMessageId } } } } }""",
            {"with": partner},
        ),
        (
            """{ me { folders { label unreadCount } folder(label: "inbox") { emails(first: 20) {
              edges { cursor node { id subject sentAt read hasAttachments from { login firstname } } }
              pageInfo { hasNextPage endCursor } } } } }""",
            None,
        ),
        (
            """query($n: String!) { room(name: $n) { __typename name participantCount
              h: messages(first: 50) { edges { c: cursor node { ...M author { __typename login } } }
              pageInfo { ...P } } } }
            fragment M on RoomMessage { id content postedAt systemMessage __typename }
            fragment P on PageInfo { hasNextPage endCursor }""",
            {"n": room},
        ),
        (
            """{ posts(first: 10) { edges { cursor node { slug title tags publishedAt commentCount
              author { login firstname lastname } } } } }""",
            None,
        ),
        ("{ me { user { login email l2: login __typename } } }", None),
        (POSTS_AND_PARTNERS, None),
        ("query($n: String!) { room(name: $n) { creator { login firstname } } }", {"n": room}),
        (ROOM_LISTS, None),
        (
            """query($s: String!) { post(slug: $s) { title commentCount author { login }
              comments(first: 10) { edges { cursor node { id commenterName text postedAt __typename } } }
            } }""",
            {"s": slug},
        ),
        ("query($l: String!) { user(login: $l) { login firstname lastname } }", {"l": partner}),
        (
            """query($with: String!) { me { conversation(with: $with) { id unreadCount
              ... @defer(label: "messages") { messages(first: 50) { nodes { id content sender { login } } } }
            } } }""",
            {"with": partner},
        ),
        (
            """query($s: String!) { post(slug: $s) { title ... @defer { comments(first: 10) {
              nodes @stream(initialCount: 1) { id commenterName text } } } } }""",
            {"s": slug},
        ),
    ]


@pytest.fixture
async def two_users(api: Api) -> tuple[Account, Account]:
    owner, partner = await api.sign_up("plo"), await api.sign_up("plp")
    send = """mutation($to: String!, $c: String!, $k: String) {
      sendMessage(to: $to, content: $c, clientMessageId: $k) { id } }"""
    for n in range(3):
        await api.ok(send, {"to": owner.login, "c": f"hello {n} ü", "k": f"partner-{n}"}, token=partner.token)
    await api.ok(send, {"to": partner.login, "c": "hi back", "k": "owner-1"}, token=owner.token)
    return owner, partner


async def test_domain_corpus_is_byte_identical(
    base_settings: Settings, api: Api, two_users: tuple[Account, Account]
) -> None:
    owner, partner = two_users
    room = await create_room(api, owner)
    for n in range(3):
        await api.ok(POST, {"r": room, "c": f"room message {n}"}, token=owner.token)
    emails = [await send_email(api, partner, [owner.login], f"subject {n}") for n in range(3)]
    slug = (await publish(api, owner.token))["slug"]
    for n in range(2):
        await comment(api, slug, name=f"reader {n}", text=f"comment {n} ü")
    await api.ok(MARK, {"id": emails[0]["id"], "read": True}, token=owner.token)
    settings = replace(base_settings)
    fast_schema: Any = build_schema(settings, plain_fields=True)
    async with (
        _served(settings, fast_schema) as fast,
        _served(settings, build_schema(settings, plain_fields=False)) as reference,
    ):
        corpus = _domain_corpus(partner.login, room, slug)
        assert await _differences(fast, reference, corpus, owner.token) == []
        # The second round ran every document in the known-documents lane, against
        # Strawberry's own execute on the reference side (executor_internals.KnownDocuments).
        assert {query for query, _ in corpus} <= {query for query, _ in fast_schema._known}
        async with aiohttp.ClientSession() as http:
            body = json.loads(await _body(http, fast, *corpus[0], owner.token))
            for query, variables in corpus:  # every query answers with data, not errors
                assert b'"errors"' not in await _body(http, fast, query, variables, owner.token)
            messages = json.loads(await _body(http, fast, *corpus[3], owner.token))
            mailbox = json.loads(await _body(http, fast, *corpus[4], owner.token))
    nodes = messages["data"]["me"]["conversation"]["messages"]["nodes"]
    assert [node["recipient"]["login"] for node in nodes] == [partner.login, owner.login, owner.login]
    assert [node["clientMessageId"] for node in nodes] == ["owner-1", None, None]  # the owner asks
    assert {node["conversationId"] for node in nodes} == {":".join(sorted([owner.login, partner.login]))}
    emails = mailbox["data"]["me"]["folder"]["emails"]["edges"]
    assert [(edge["node"]["subject"], edge["node"]["read"]) for edge in emails] == [
        ("subject 2", False), ("subject 1", False), ("subject 0", True),
    ]  # fmt: skip
    edges = body["data"]["me"]["talkPartners"]["edges"]
    assert [edge["node"]["partner"]["login"] for edge in edges] == [partner.login]
    assert edges[0]["node"]["lastMessage"] == "hi back"


async def test_list_items_answer_from_their_page_without_a_resolver_each(
    api: Api, two_users: tuple[Account, Account], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page hands its items what their fields need (the viewer, the partner rows, the
    participant counts): selected on every item, those fields are read, not resolved.
    An item reached alone still resolves them (the counters below see those calls)."""
    owner, partner = two_users
    room = await create_room(api, owner)
    calls: Counter[str] = Counter()

    def counted(name: str, original: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return original(*args, **kwargs)

        return call

    monkeypatch.setattr(
        DirectMessage, "_client_message_id_for_viewer",
        counted("viewer", DirectMessage._client_message_id_for_viewer),
    )  # fmt: skip
    monkeypatch.setattr(Conversation, "_unread", counted("unread", Conversation._unread))
    monkeypatch.setattr(Loader, "load", counted("load", Loader.load))

    page = await api.ok(
        """query($w: String!) { me { conversation(with: $w) { messages(first: 10) {
          nodes { clientMessageId } } } } }""",
        {"w": partner.login},
        token=owner.token,
    )
    keys = [n["clientMessageId"] for n in page["me"]["conversation"]["messages"]["nodes"]]
    assert keys == ["owner-1", None, None, None]
    partners = await api.ok(
        """{ me { talkPartners(first: 10) { nodes {
          conversation { unreadCount unreadSince with { login } } } } } }""",
        token=owner.token,
    )
    conversation = partners["me"]["talkPartners"]["nodes"][0]["conversation"]
    assert conversation["unreadCount"] == 3 and conversation["with"] == {"login": partner.login}
    listed = await api.ok("{ rooms(first: 100) { nodes { name participantCount } } }")
    assert {"name": room, "participantCount": 1} in listed["rooms"]["nodes"]
    assert calls == Counter()

    sent = await api.ok(
        """mutation($to: String!) {
          sendMessage(to: $to, content: "one", clientMessageId: "k") { clientMessageId } }""",
        {"to": partner.login},
        token=owner.token,
    )
    assert sent["sendMessage"]["clientMessageId"] == "k"
    alone = await api.ok(
        "query($w: String!) { me { conversation(with: $w) { unreadCount } } }",
        {"w": partner.login},
        token=owner.token,
    )
    assert alone["me"]["conversation"]["unreadCount"] == 3
    one = await api.ok("query($n: String!) { room(name: $n) { participantCount } }", {"n": room})
    assert one["room"]["participantCount"] == 1
    assert calls["viewer"] == 1 and calls["unread"] == 1 and calls["load"] >= 2
