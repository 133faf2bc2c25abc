"""Subscriptions that resume: ``messageReceived(after:)`` and ``roomMessages(room:, after:)``
replay what was stored after a message the client holds, oldest first, then go live, with
no gap and no repeat at the seam; clients that keep dropping their sockets and resuming
end with every message exactly once, in order."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from gql import GraphQLRequest
from gql.transport.exceptions import TransportQueryError

from gateway.db.session import RequestMetrics, measuring
from gateway.db.timeline import REPLAY_MAX
from gateway.messenger.store import MessengerStore
from gateway.server.app import SERVICES
from tests.conftest import ServerFactory
from tests.support.client import Account, Api
from tests.support.ids import uuid_of
from tests.support.messenger import send
from tests.support.rooms import create_room, join, post

DIRECT = """subscription($after: String) {
  messageReceived(after: $after) { id content sender { login } }
}"""
ROOM = """subscription($r: String!, $after: String) {
  roomMessages(room: $r, after: $after) { id content systemMessage author { login } }
}"""
PAGE = """query($w: String!, $first: Int) {
  me { conversation(with: $w) { messages(first: $first) { edges { cursor node { id } } } } }
}"""
WAIT = 60
#: Subscriptions started by the resuming clients, per document (printed: the test's scale).
RESUMES: dict[str, int] = {}


@contextlib.asynccontextmanager
async def _events(
    api: Api, account: Account, query: str, variables: dict[str, Any]
) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
    """The subscription's events in a queue, while the block runs (its socket closes after)."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def listen() -> None:
        async with api.websocket(account.token) as session:
            async for result in session.subscribe(GraphQLRequest(query, variable_values=variables)):
                queue.put_nowait(next(iter(result.values())))

    task = asyncio.create_task(listen())
    try:
        yield queue
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _take(queue: asyncio.Queue[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    return [await asyncio.wait_for(queue.get(), WAIT) for _ in range(count)]


async def _refusal(api: Api, account: Account, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    try:
        async with api.websocket(account.token) as session:
            async for result in session.subscribe(GraphQLRequest(query, variable_values=variables)):
                raise AssertionError(f"the subscription delivered {result}")
    except TransportQueryError as exc:
        assert exc.errors
        error: dict[str, Any] = exc.errors[0]
        return error
    raise AssertionError("the subscription ended without an error")


async def test_message_received_replays_every_conversation_after_the_message_then_goes_live(
    api: Api, app: web.Application
) -> None:
    bob, alice, carol = [await api.sign_up("resume") for _ in range(3)]
    held = await send(api, alice, bob.login, "seen before the drop")
    missed = [
        await send(api, alice, bob.login, "from alice 1"),
        await send(api, carol, bob.login, "from carol 1"),
        await send(api, bob, alice.login, "bob's own, from another device"),
        await send(api, alice, bob.login, "from alice 2"),
    ]
    async with _events(api, bob, DIRECT, {"after": held["id"]}) as queue:
        replayed = await _take(queue, len(missed))
        assert [event["id"] for event in replayed] == [message["id"] for message in missed]
        assert replayed[1]["sender"] == {"login": carol.login}
        live = await send(api, carol, bob.login, "live")
        assert (await _take(queue, 1))[0]["id"] == live["id"]
        assert queue.empty()

    # The cursor of an edge the client paged to is as good as the message's id.
    page = (await api.ok(PAGE, {"w": alice.login, "first": 10}, token=bob.token))["me"]["conversation"]
    edges = {edge["node"]["id"]: edge["cursor"] for edge in page["messages"]["edges"]}
    async with _events(api, bob, DIRECT, {"after": edges[missed[2]["id"]]}) as queue:
        assert [event["id"] for event in await _take(queue, 2)] == [missed[3]["id"], live["id"]]

    # The replay costs the main view's slice and IN read, and one read per conversation
    # that changed (two here), however many messages they hold.
    store = app[SERVICES].store(MessengerStore)
    with measuring(RequestMetrics()) as metrics:
        found = await store.messages_since(bob.login, uuid_of(held["id"]), REPLAY_MAX)
    assert found is not None and len(found) == 5
    assert metrics.statements == 2 + 2


async def test_room_messages_replay_after_the_message_then_go_live(api: Api) -> None:
    owner, member = await api.sign_up("resume"), await api.sign_up("resume")
    name = await create_room(api, owner)
    await join(api, member, name)
    held = await post(api, owner, name, "seen")
    missed = [
        await post(api, account, name, f"missed {n}") for n, account in enumerate((member, owner, member))
    ]
    async with _events(api, member, ROOM, {"r": name, "after": held["id"]}) as queue:
        replayed = await _take(queue, 3)
        assert [event["id"] for event in replayed] == [message["id"] for message in missed]
        assert replayed[0]["author"] == {"login": member.login}
        live = await post(api, owner, name, "live")
        assert (await _take(queue, 1))[0]["id"] == live["id"]


async def test_resume_arguments_are_checked(api: Api) -> None:
    owner, stranger = await api.sign_up("resume"), await api.sign_up("resume")
    name = await create_room(api, owner)
    for bad in ("not a cursor", "x" * 2000, ""):
        refused = await _refusal(api, owner, DIRECT, {"after": bad})
        assert refused["extensions"]["code"] == "BAD_USER_INPUT", refused
        assert refused["extensions"]["field"] == "after" and "after" in refused["message"]
        refused = await _refusal(api, owner, ROOM, {"r": name, "after": bad})
        assert refused["extensions"]["code"] == "BAD_USER_INPUT", refused
        assert refused["extensions"]["field"] == "after"
    first = await post(api, owner, name, "hello")
    # A non-participant learns nothing from a replay.
    refused = await _refusal(api, stranger, ROOM, {"r": name, "after": first["id"]})
    assert refused["extensions"]["code"] == "FORBIDDEN"


async def test_more_than_the_replay_bound_says_to_page_instead(api: Api) -> None:
    owner = await api.sign_up("resume")
    name = await create_room(api, owner)
    start = await post(api, owner, name, "start")
    gate = asyncio.Semaphore(8)

    async def one(n: int) -> None:
        async with gate:
            await post(api, owner, name, f"m{n}")

    await asyncio.gather(*(one(n) for n in range(REPLAY_MAX)))
    # Exactly the bound: replayed whole.
    async with _events(api, owner, ROOM, {"r": name, "after": start["id"]}) as queue:
        assert len({event["id"] for event in await _take(queue, REPLAY_MAX)}) == REPLAY_MAX
    await post(api, owner, name, "one too many")
    refused = await _refusal(api, owner, ROOM, {"r": name, "after": start["id"]})
    assert refused["extensions"]["code"] == "BAD_USER_INPUT"
    assert "after" in refused["message"] and "last" in refused["message"]


async def _resuming_client(
    api: Api,
    account: Account,
    query: str,
    variables: dict[str, Any],
    after: str,
    total: int,
    seed: int,
    got: list[str],
) -> list[str]:
    """A client that takes a few events, drops its socket, waits a little and resumes from
    the last message it holds, until it holds ``total``."""
    rng = random.Random(seed)
    while len(got) < total:
        RESUMES[query] = RESUMES.get(query, 0) + 1
        take = rng.randint(1, 25)
        async with api.websocket(account.token) as session:
            request = GraphQLRequest(query, variable_values={**variables, "after": after})
            async for result in session.subscribe(request):
                got.append(next(iter(result.values()))["id"])
                after = got[-1]
                take -= 1
                if take == 0 or len(got) >= total:
                    break
        await asyncio.sleep(rng.random() * 0.05)
    return got


def _same(got: list[str], sent: list[str]) -> None:
    """``got`` is ``sent``: nothing missing, nothing twice, in order (said which, if not)."""
    if got == sent:
        return
    missing = [sent.index(m) for m in sent if m not in got]
    twice = [sent.index(m) if m in sent else m for m in got if got.count(m) > 1]
    at = next(n for n, (a, b) in enumerate(zip(got, sent, strict=False)) if a != b)
    order = [sent.index(m) if m in sent else m for m in got[max(0, at - 3) : at + 5]]
    raise AssertionError(f"missing {missing}, twice {twice}, from {at}: {order}")


async def test_twenty_clients_dropping_and_resuming_get_every_direct_message_once_in_order(
    make_server: ServerFactory,
) -> None:
    # One-second slots and two-second buckets: pairs move in the main view and messages
    # cross buckets all through the run, so replays meet both.
    api, _ = await make_server(messenger_activity_slot=1, messenger_bucket="2s")
    bob, alice, carol = await api.sign_up("resume"), await api.sign_up("resume"), await api.sign_up("resume")
    start = await send(api, alice, bob.login, "start")
    total = 200
    holds: list[list[str]] = [[] for _ in range(20)]
    clients = [
        asyncio.create_task(_resuming_client(api, bob, DIRECT, {}, start["id"], total, seed, holds[seed]))
        for seed in range(20)
    ]
    sent = []
    for n in range(total):
        sender = alice if n % 2 else carol
        sent.append((await send(api, sender, bob.login, f"m{n}"))["id"])
    done, _ = await asyncio.wait(clients, timeout=WAIT * 3)
    for client in clients:
        client.cancel()
    for got in holds:
        _same(got, sent)
    assert len(done) == len(clients)
    print(f"20 clients, {total} messages, {RESUMES[DIRECT]} subscriptions (each after the last held)")


async def test_twenty_clients_dropping_and_resuming_get_every_room_message_once_in_order(
    make_server: ServerFactory,
) -> None:
    api, _ = await make_server(room_bucket="2s")
    owner = await api.sign_up("resume")
    members = [await api.sign_up("resume") for _ in range(4)]
    name = await create_room(api, owner)
    for member in members:
        await join(api, member, name)
    start = await post(api, owner, name, "start")
    total = 200
    holds: list[list[str]] = [[] for _ in range(20)]
    clients = [
        asyncio.create_task(
            _resuming_client(api, members[seed % 4], ROOM, {"r": name}, start["id"], total, seed, holds[seed])
        )
        for seed in range(20)
    ]
    sent = []
    for n in range(total):
        sent.append((await post(api, members[n % 4] if n % 3 else owner, name, f"m{n}"))["id"])
    done, _ = await asyncio.wait(clients, timeout=WAIT * 3)
    for client in clients:
        client.cancel()
    for got in holds:
        _same(got, sent)
    assert len(done) == len(clients)
    print(f"20 clients, {total} room messages, {RESUMES[ROOM]} subscriptions (each after the last held)")
