"""Every timeline pages both ways with Relay's semantics: ``first``/``after`` towards the
tail, ``last``/``before`` towards the head, edges always in the list's order, and both
``pageInfo`` flags true to the data; a client that reconnects asks for exactly what it
missed with ``last``/``before`` from the newest cursor it holds."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from gql import GraphQLRequest

from gateway.messenger.events import user_messages_channel
from gateway.server.app import SERVICES
from tests.support.blog import comment, publish, unique_tag
from tests.support.client import Account, Api
from tests.support.mail_helpers import send as send_email
from tests.support.messenger import send
from tests.support.rooms import create_room, post

PAGE_INFO = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"
ARGS = "$first: Int, $after: String, $last: Int, $before: String"
PAGING = "first: $first, after: $after, last: $last, before: $before"


@dataclass
class Timeline:
    """One connection: the query, where its connection sits in the answer, and how to fill it."""

    name: str
    query: str
    path: list[str]
    #: Makes the owner, the variables and the list's ids in list order (head first).
    fill: Callable[[Api, int], Awaitable[tuple[Account, dict[str, Any], list[str]]]]


async def _conversation(api: Api, count: int) -> tuple[Account, dict[str, Any], list[str]]:
    alice, bob = await api.sign_up("both"), await api.sign_up("bothb")
    ids = [(await send(api, alice, bob.login, f"m{n}"))["id"] for n in range(count)]
    return alice, {"w": bob.login}, ids[::-1]


async def _room(api: Api, count: int) -> tuple[Account, dict[str, Any], list[str]]:
    alice = await api.sign_up("bothr")
    name = await create_room(api, alice)
    ids = [(await post(api, alice, name, f"m{n}"))["id"] for n in range(count)]
    return alice, {"r": name}, ids[::-1]  # the creation's system message is last: the test ignores it


async def _folder(api: Api, count: int) -> tuple[Account, dict[str, Any], list[str]]:
    alice, bob = await api.sign_up("bothm"), await api.sign_up("bothn")
    subjects = [f"s{n}" for n in range(count)]
    for subject in subjects:
        await send_email(api, alice, [bob.login], subject)
    return bob, {}, subjects[::-1]


async def _comments(api: Api, count: int) -> tuple[Account, dict[str, Any], list[str]]:
    alice = await api.sign_up("bothc")
    slug = (await publish(api, alice.token))["slug"]
    ids = [(await comment(api, slug, text=f"c{n}"))["id"] for n in range(count)]
    return alice, {"s": slug}, ids  # oldest first


async def _tagged(api: Api, count: int) -> tuple[Account, dict[str, Any], list[str]]:
    alice = await api.sign_up("botht")
    tag = unique_tag()
    slugs = [(await publish(api, alice.token, tags=[tag]))["slug"] for _ in range(count)]
    return alice, {"t": tag}, slugs[::-1]


async def _authored(api: Api, count: int) -> tuple[Account, dict[str, Any], list[str]]:
    alice = await api.sign_up("botha")
    slugs = [(await publish(api, alice.token))["slug"] for _ in range(count)]
    return alice, {"l": alice.login}, slugs[::-1]


TIMELINES = [
    Timeline(
        "conversation messages",
        f"query($w: String!, {ARGS}) {{ me {{ conversation(with: $w) {{ messages({PAGING}) {{"
        f" edges {{ cursor node {{ id }} }} {PAGE_INFO} }} }} }} }}",
        ["me", "conversation", "messages"],
        _conversation,
    ),
    Timeline(
        "room messages",
        f"query($r: String!, {ARGS}) {{ room(name: $r) {{ messages({PAGING}) {{"
        f" edges {{ cursor node {{ id }} }} {PAGE_INFO} }} }} }}",
        ["room", "messages"],
        _room,
    ),
    Timeline(
        "folder emails",
        f'query({ARGS}) {{ me {{ folder(label: "inbox") {{ emails({PAGING}) {{'
        f" edges {{ cursor node {{ id: subject }} }} {PAGE_INFO} }} }} }} }}",
        ["me", "folder", "emails"],
        _folder,
    ),
    Timeline(
        "comments",
        f"query($s: String!, {ARGS}) {{ post(slug: $s) {{ comments({PAGING}) {{"
        f" edges {{ cursor node {{ id }} }} {PAGE_INFO} }} }} }}",
        ["post", "comments"],
        _comments,
    ),
    Timeline(
        "posts by tag",
        f"query($t: String, {ARGS}) {{ posts(tag: $t, {PAGING}) {{"
        f" edges {{ cursor node {{ id: slug }} }} {PAGE_INFO} }} }}",
        ["posts"],
        _tagged,
    ),
    Timeline(
        "an author's posts",
        f"query($l: String!, {ARGS}) {{ user(login: $l) {{ posts({PAGING}) {{"
        f" edges {{ cursor node {{ id: slug }} }} {PAGE_INFO} }} }} }}",
        ["user", "posts"],
        _authored,
    ),
]


def _node_id(edge: dict[str, Any]) -> str:
    node = edge["node"]["id"]
    return str(node["id"] if isinstance(node, dict) else node)


async def _page(
    api: Api, timeline: Timeline, account: Account, variables: dict[str, Any], **paging: Any
) -> dict[str, Any]:
    data = await api.ok(timeline.query, {**variables, **paging}, token=account.token)
    for key in timeline.path:
        data = data[key]
    return data


@pytest.mark.parametrize("timeline", TIMELINES, ids=[t.name for t in TIMELINES])
async def test_a_timeline_reads_the_same_list_forward_and_back(api: Api, timeline: Timeline) -> None:
    account, variables, expected = await timeline.fill(api, 7)
    forward: list[str] = []
    after: str | None = None
    while True:
        page = await _page(api, timeline, account, variables, first=3, after=after)
        forward += [_node_id(edge) for edge in page["edges"]]
        assert page["pageInfo"]["hasPreviousPage"] is (after is not None)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    backward: list[str] = []
    before: str | None = None
    while True:
        page = await _page(api, timeline, account, variables, last=3, before=before)
        backward = [_node_id(edge) for edge in page["edges"]] + backward  # each page in list order
        assert page["pageInfo"]["hasNextPage"] is (before is not None)
        if not page["pageInfo"]["hasPreviousPage"]:
            break
        before = page["pageInfo"]["startCursor"]
    relevant = set(expected)
    assert [i for i in forward if i in relevant] == expected
    assert backward == forward


@pytest.mark.parametrize(
    ("paging", "field"),
    [
        ({"first": 2, "last": 2}, "last"),
        ({"last": 2, "after": "AAAA"}, "before"),
        ({"last": -1}, "last"),
        ({"last": 2, "before": "not a cursor!"}, "before"),
    ],
)
async def test_paging_both_ways_at_once_is_bad_user_input(
    api: Api, paging: dict[str, Any], field: str
) -> None:
    account, variables, _ = await _conversation(api, 1)
    error = await api.error(TIMELINES[0].query, {**variables, **paging}, token=account.token)
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": field}


async def test_a_client_back_from_a_dropped_socket_fetches_exactly_what_it_missed(
    api: Api, app: web.Application
) -> None:
    """Subscribed, a client keeps the newest cursor it saw; its socket drops, 120 messages
    are sent, and pages of ``last: 50, before: <that cursor>`` bring exactly those 120,
    in order, each page at the same cost."""
    alice, bob = await api.sign_up("drop"), await api.sign_up("dropb")
    conversation = TIMELINES[0]
    live = app[SERVICES].live
    assert live is not None
    received: list[dict[str, Any]] = []

    async def listen() -> None:
        async with api.websocket(bob.token) as session:
            request = GraphQLRequest("subscription { messageReceived { id } }")
            async for result in session.subscribe(request):
                received.append(result["messageReceived"])

    listening = asyncio.create_task(listen())
    for _ in range(200):
        if live.followers(user_messages_channel(bob.login)):
            break
        await asyncio.sleep(0.05)
    seen = [(await send(api, alice, bob.login, f"before {n}"))["id"] for n in range(3)]
    for _ in range(200):
        if len(received) == 3:
            break
        await asyncio.sleep(0.05)
    newest = await _page(api, conversation, bob, {"w": alice.login}, first=1)
    newest_cursor = newest["pageInfo"]["startCursor"]
    listening.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await listening
    assert [m["id"] for m in received] == seen

    missed = [(await send(api, alice, bob.login, f"while away {n}"))["id"] for n in range(120)]

    caught: list[str] = []
    costs: list[int] = []
    before = newest_cursor
    while True:
        response = await api.call(
            conversation.query, {"w": alice.login, "last": 50, "before": before}, token=bob.token
        )
        page = response.result["me"]["conversation"]["messages"]
        caught = [_node_id(edge) for edge in page["edges"]] + caught
        costs.append(response.statements)
        if not page["pageInfo"]["hasPreviousPage"]:
            break
        before = page["pageInfo"]["startCursor"]
    assert caught == missed[::-1]  # newest first, as the list is
    # Session, the two users, the bucket's slice; the last page also reads the
    # bucket index to learn no newer bucket follows.
    assert len(costs) == 3 and max(costs) <= 5, costs
