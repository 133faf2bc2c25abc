"""Messenger through a real GraphQL client against the real node: sending, the main view,
conversations, paging across buckets, idempotent retries, validation and statement counts."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiohttp import web

from gateway.db.clock import new_timeuuid, time_of
from gateway.messenger.records import MessageRecord, conversation_id
from gateway.server.app import SERVICES
from tests.conftest import ServerFactory
from tests.support.client import Account, Api, unique_login
from tests.support.ids import id_parts, key, uuid_of
from tests.support.messenger import (
    CONVERSATION,
    MAIN_VIEW,
    MARK_READ,
    SEND,
    all_message_ids,
    conversation,
    partners,
    send,
    store_of,
)


async def partner_view(api: Api, account: Account, partner: str) -> dict[str, Any]:
    found = [p for p in await partners(api, account) if p["partner"]["login"] == partner]
    assert len(found) == 1, found
    return found[0]


async def test_send_read_main_view_round_trip(api: Api) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")

    first = await send(api, alice, bob.login, "  Hello Bob!  ")
    assert first["content"] == "Hello Bob!"  # trimmed
    assert first["sender"] == {"login": alice.login}
    assert first["recipient"] == {"login": bob.login}
    assert first["conversationId"] == ":".join(sorted([alice.login, bob.login]))
    assert first["sentAt"].endswith("Z")
    assert uuid_of(first["id"]).version == 1  # a time-based id under the global one
    await send(api, alice, bob.login, "Are you there?")
    third = await send(api, alice, bob.login, "Ping")

    bobs = await partner_view(api, bob, alice.login)
    assert bobs["lastMessage"] == "Ping"
    assert bobs["lastMessageId"] == third["id"]
    assert bobs["lastMessageAt"] == third["sentAt"]
    assert bobs["lastMessageSender"] == {"login": alice.login}
    assert bobs["unreadCount"] == 3
    assert bobs["unreadSince"] == first["sentAt"]
    assert bobs["partner"]["firstname"] == "Test"
    assert bobs["conversation"]["unreadCount"] == 3
    assert id_parts(bobs["conversation"]["id"]) == ["Conversation", bob.login, alice.login]  # bob's own

    # The sender sees the conversation too, with nothing unread.
    alices = await partner_view(api, alice, bob.login)
    assert alices["lastMessage"] == "Ping"
    assert alices["unreadCount"] == 0
    assert alices["unreadSince"] is None

    view = await conversation(api, bob, alice.login)
    assert view["id"] == bobs["conversation"]["id"]
    assert view["with"] == {"login": alice.login}
    assert view["unreadCount"] == 3
    assert view["unreadSince"] == first["sentAt"]
    contents = [e["node"]["content"] for e in view["messages"]["edges"]]
    assert contents == ["Ping", "Are you there?", "Hello Bob!"]

    read = (await api.ok(MARK_READ, {"with": alice.login}, token=bob.token))["markConversationRead"]
    assert read == {
        "partner": {"login": alice.login},
        "unreadCount": 0,
        "unreadSince": None,
        "lastMessage": "Ping",
    }
    bobs = await partner_view(api, bob, alice.login)
    assert (bobs["unreadCount"], bobs["unreadSince"]) == (0, None)

    # Marking again is harmless; a reply counts for the other side only.
    await api.ok(MARK_READ, {"with": alice.login}, token=bob.token)
    reply = await send(api, bob, alice.login, "Yes!")
    alices = await partner_view(api, alice, bob.login)
    assert (alices["unreadCount"], alices["unreadSince"]) == (1, reply["sentAt"])
    assert alices["lastMessageSender"] == {"login": bob.login}
    bobs = await partner_view(api, bob, alice.login)
    assert (bobs["unreadCount"], bobs["lastMessage"]) == (0, "Yes!")

    # unreadSince is set again when the count leaves zero.
    again = await send(api, alice, bob.login, "Great")
    bobs = await partner_view(api, bob, alice.login)
    assert (bobs["unreadCount"], bobs["unreadSince"]) == (1, again["sentAt"])


async def test_conversation_with_someone_never_talked_to_is_empty(api: Api) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    view = await conversation(api, alice, bob.login)
    assert view["unreadCount"] == 0
    assert view["unreadSince"] is None
    assert view["messages"] == {"edges": [], "pageInfo": {"hasNextPage": False, "endCursor": None}}
    assert await partners(api, alice) == []
    read = (await api.ok(MARK_READ, {"with": bob.login}, token=alice.token))["markConversationRead"]
    assert read == {
        "partner": {"login": bob.login},
        "unreadCount": 0,
        "unreadSince": None,
        "lastMessage": None,
    }


async def test_partners_are_ordered_by_most_recent_message(api: Api) -> None:
    me = await api.sign_up("me")
    carol, dave, erin = [await api.sign_up(name) for name in ("carol", "dave", "erin")]
    await send(api, carol, me.login, "from carol")
    await send(api, dave, me.login, "from dave")
    await send(api, me, erin.login, "to erin")
    assert [p["partner"]["login"] for p in await partners(api, me)] == [erin.login, dave.login, carol.login]

    await send(api, carol, me.login, "carol again")
    order = [p["partner"]["login"] for p in await partners(api, me)]
    assert order == [carol.login, erin.login, dave.login]
    # Reading does not reorder; only messages do.
    await api.ok(MARK_READ, {"with": dave.login}, token=me.token)
    assert [p["partner"]["login"] for p in await partners(api, me)] == order


async def test_two_hundred_messages_page_across_buckets(api: Api, make_server: ServerFactory) -> None:
    tiny_api, tiny_app = await make_server(messenger_bucket="1s")
    alice = await tiny_api.sign_up("alice")
    bob = await tiny_api.sign_up("bob")
    sent: list[str] = []
    for n in range(200):
        if n == 100:
            # Half the messages in a later bucket than the first, however fast they go.
            first_second = time_of(uuid_of(sent[0])).timestamp() // 1
            await asyncio.sleep(max(0.0, first_second + 1.01 - time.time()))
        message = await send(tiny_api, alice if n % 3 else bob, bob.login if n % 3 else alice.login, f"m{n}")
        sent.append(message["id"])
    conversation_key = conversation_id(alice.login, bob.login)
    buckets = await tiny_app[SERVICES].db.execute(
        "SELECT bucket FROM direct_message_buckets WHERE conversation_id = ?", (conversation_key,)
    )
    assert len(buckets.rows) >= 2, "the test must span several buckets"

    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = (await conversation(tiny_api, bob, alice.login, first=10, after=after))["messages"]
        pages += 1
        seen.extend(edge["node"]["id"] for edge in page["edges"])
        if pages == 5:
            # A message arriving mid-way never shifts the pages still to come.
            await send(tiny_api, alice, bob.login, "late arrival")
        if not page["pageInfo"]["hasNextPage"]:
            break
        assert len(page["edges"]) == 10
        after = page["pageInfo"]["endCursor"]
    assert seen == list(reversed(sent))  # every message exactly once, newest first
    assert pages == 20


async def test_a_retried_client_message_id_stores_one_message(api: Api, app: web.Application) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    first = await send(api, alice, bob.login, "Only once", key="outbox-1")
    assert first["clientMessageId"] == "outbox-1"
    again = await send(api, alice, bob.login, "Only once", key="outbox-1")
    assert again == first
    # Concurrent retries, as a flaky network produces them.
    racing = await asyncio.gather(
        *(send(api, alice, bob.login, "Only once", key="outbox-2") for _ in range(8))
    )
    assert len({m["id"] for m in racing}) == 1

    ids = await all_message_ids(api, bob, alice.login)
    assert sorted(ids) == sorted([first["id"], racing[0]["id"]])
    assert (await partner_view(api, bob, alice.login))["unreadCount"] == 2
    # The key belongs to the sender: the recipient never sees it.
    node = await api.ok(
        "query($w: String!) { me { conversation(with: $w) {"
        " messages(first: 1) { nodes { clientMessageId } } } } }",
        {"w": alice.login},
        token=bob.token,
    )
    assert node["me"]["conversation"]["messages"]["nodes"] == [{"clientMessageId": None}]
    # The sender sees each of their keys, on every message of a page.
    mine = await api.ok(
        "query($w: String!) { me { conversation(with: $w) {"
        " messages(first: 5) { nodes { content clientMessageId } } } } }",
        {"w": bob.login},
        token=alice.token,
    )
    keys = [node["clientMessageId"] for node in mine["me"]["conversation"]["messages"]["nodes"]]
    assert keys == ["outbox-2", "outbox-1"]


async def test_a_send_that_failed_after_counting_heals_on_retry(api: Api, app: web.Application) -> None:
    """The claim and the unread increment landed, the message write did not (the
    gateway lost Cassandra in between): the client's retry with the same key
    writes the message under the claimed id and counts nothing twice."""
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    lost_id = new_timeuuid()
    store = store_of(app)
    counted = await store.unread.count_received(bob.login, alice.login, lost_id, time_of(lost_id), "outbox-9")
    assert counted.counted_now
    assert await all_message_ids(api, bob, alice.login) == []

    retried = await send(api, alice, bob.login, "Second try", key="outbox-9")
    assert key(retried["id"]) == str(lost_id)
    assert await all_message_ids(api, bob, alice.login) == [retried["id"]]
    view = await partner_view(api, bob, alice.login)
    assert (view["unreadCount"], view["lastMessage"]) == (1, "Second try")
    assert key((await send(api, alice, bob.login, "Second try", key="outbox-9"))["id"]) == str(lost_id)
    assert (await partner_view(api, bob, alice.login))["unreadCount"] == 1


async def test_two_messages_in_the_same_millisecond_both_survive(api: Api, app: web.Application) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    store = store_of(app)
    instant = 1_767_225_600_123_456_789  # the very same nanosecond, twice
    twins = [MessageRecord(new_timeuuid(instant), alice.login, bob.login, f"twin {n}") for n in range(2)]
    assert twins[0].id != twins[1].id
    for twin in twins:
        await store.write_message(twin)
    nodes = [e["node"] for e in (await conversation(api, bob, alice.login))["messages"]["edges"]]
    assert sorted(n["content"] for n in nodes) == ["twin 0", "twin 1"]
    assert nodes[0]["sentAt"] == nodes[1]["sentAt"]

    # And through the API: a burst of concurrent sends keeps every message.
    burst = await asyncio.gather(*(send(api, alice, bob.login, f"burst {n}") for n in range(25)))
    ids = await all_message_ids(api, bob, alice.login)
    assert len(ids) == len(set(ids)) == 27
    assert {m["id"] for m in burst} <= set(ids)


async def test_main_view_costs_the_same_statements_for_5_and_50_partners(api: Api) -> None:
    async def user_with_partners(count: int) -> Account:
        owner = await api.sign_up("owner")
        others = await asyncio.gather(*(api.sign_up("p") for _ in range(count)))
        await asyncio.gather(*(send(api, other, owner.login, f"hi from {other.login}") for other in others))
        return owner

    small, large = await user_with_partners(5), await user_with_partners(50)
    small_response = await api.call(MAIN_VIEW, token=small.token)
    large_response = await api.call(MAIN_VIEW, token=large.token)
    assert not small_response.errors and not large_response.errors
    assert len(small_response.result["me"]["talkPartners"]["nodes"]) == 5
    assert len(large_response.result["me"]["talkPartners"]["nodes"]) == 50
    assert all(p["unreadCount"] == 1 for p in large_response.result["me"]["talkPartners"]["nodes"])
    # Activity slice + pairs' rows + one batched user read, whatever the number of partners (the
    # session is known to the process since the sign-up).
    assert small_response.statements == large_response.statements == 3


async def test_a_page_of_messages_costs_the_same_statements_for_5_and_50(api: Api) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    carol = await api.sign_up("carol")
    await asyncio.gather(*(send(api, alice, bob.login, f"m{n}") for n in range(50)))
    await asyncio.gather(*(send(api, alice, carol.login, f"m{n}") for n in range(5)))
    few = await api.call(CONVERSATION, {"with": alice.login, "first": 50}, token=carol.token)
    many = await api.call(CONVERSATION, {"with": alice.login, "first": 50}, token=bob.token)
    assert len(few.result["me"]["conversation"]["messages"]["edges"]) == 5
    assert len(many.result["me"]["conversation"]["messages"]["edges"]) == 50
    assert few.statements == many.statements


@pytest.mark.parametrize(
    ("variables", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "   \n\t "}, "content"),
        ({"content": "x" * 4001}, "content"),
        ({"to": "x"}, "to"),
        ({"to": "Not A Login!"}, "to"),
        ({"key": ""}, "clientMessageId"),
        ({"key": "k" * 101}, "clientMessageId"),
    ],
)
async def test_send_validation_names_the_field(api: Api, variables: dict[str, Any], field: str) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    arguments = {"to": bob.login, "content": "hi", "key": None, **variables}
    error = await api.error(SEND, arguments, token=alice.token)
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": field}
    assert await partners(api, bob) == []


async def test_send_edge_cases(api: Api) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    longest = await send(api, alice, bob.login, "y" * 4000)
    assert len(longest["content"]) == 4000
    assert (await send(api, alice, bob.login.upper(), "case-insensitive login"))["recipient"] == {
        "login": bob.login
    }

    to_self = await api.error(SEND, {"to": alice.login, "content": "hi"}, token=alice.token)
    assert to_self["extensions"] == {"code": "BAD_USER_INPUT", "field": "to"}
    nobody = unique_login("nobody")
    missing = await api.error(SEND, {"to": nobody, "content": "hi"}, token=alice.token)
    assert missing["extensions"]["code"] == "NOT_FOUND"
    assert missing["extensions"]["field"] == "to"
    anonymous = await api.error(SEND, {"to": bob.login, "content": "hi"})
    assert anonymous["extensions"]["code"] == "UNAUTHENTICATED"

    read_missing = await api.error(MARK_READ, {"with": nobody}, token=alice.token)
    assert read_missing["extensions"]["code"] == "NOT_FOUND"
    read_self = await api.error(MARK_READ, {"with": alice.login}, token=alice.token)
    assert read_self["extensions"] == {"code": "BAD_USER_INPUT", "field": "with"}
    assert (await api.error(MARK_READ, {"with": bob.login}))["extensions"]["code"] == "UNAUTHENTICATED"


async def test_conversation_arguments_are_validated(api: Api) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    await send(api, alice, bob.login, "hi")
    too_many = await api.error(CONVERSATION, {"with": bob.login, "first": 101}, token=alice.token)
    assert too_many["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    negative = await api.error(CONVERSATION, {"with": bob.login, "first": -1}, token=alice.token)
    assert negative["extensions"] == {"code": "BAD_USER_INPUT", "field": "first"}
    bad_cursor = await api.error(CONVERSATION, {"with": bob.login, "after": "garbage!"}, token=alice.token)
    assert bad_cursor["extensions"] == {"code": "BAD_USER_INPUT", "field": "after"}
    missing = await api.error(CONVERSATION, {"with": unique_login("nobody")}, token=alice.token)
    assert missing["extensions"]["code"] == "NOT_FOUND"
    yourself = await api.error(CONVERSATION, {"with": alice.login}, token=alice.token)
    assert yourself["extensions"] == {"code": "BAD_USER_INPUT", "field": "with"}
    assert (await api.ok(CONVERSATION, {"with": bob.login}))["me"] is None
