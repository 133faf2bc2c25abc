"""Apollo Client 4's default cache (tests/js/apollo_cache.mjs) kept current by the v3
cache-ready payloads alone: no typePolicies, no update functions, no refetch."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.support.client import Api
from tests.support.js_runner import run_node

TALK_PARTNERS = "{ me { talkPartners(first: 10) { nodes { partner { login } } } } }"


def read_from_cache_only(state: dict[str, Any]) -> None:
    """Each read of the cache: readQuery and the `cache-only` queries agree, and none of them
    reached the link (no HTTP request, no operation at all)."""
    assert state["cacheOnlyQueriesAgree"] is True
    assert state["requestsWhileReading"] == 0
    assert state["operationsWhileReading"] == 0


async def test_cache_ready_payloads_in_apollo_client(api: Api) -> None:
    alice = await api.sign_up("cachea")
    bob = await api.sign_up("cacheb")
    carol = await api.sign_up("cachec")
    config = {
        "url": api.url,
        **{
            name: {"login": a.login, "token": a.token}
            for name, a in (("alice", alice), ("bob", bob), ("carol", carol))
        },
    }
    started = time.monotonic()
    report = await run_node("apollo_cache.mjs", json.dumps(config), needs="@apollo/client", seconds=120)
    print(f"Apollo cache scenario: {time.monotonic() - started:.1f}s; {json.dumps(report, indent=1)}")

    sent = report["sent"]
    newest = {"id": sent["id"], "content": sent["content"]}
    # The row and the conversation both sides show once the message is in: bob's hello is
    # alice's one unread, the new message is bob's.
    row = {"lastMessage": sent["content"], "lastMessageAt": sent["sentAt"]}
    for side in ("alice", "aliceWithoutLinks", "bob", "bobWithoutLinks"):
        for state in ("before", "after"):
            read_from_cache_only(report[side][state])
            # The conversation read through node(id:) is the same entity as through `me`.
            assert report[side][state]["conversationByNode"] is True

    # Alice's screens before the send: bob's hello.
    before, after = report["alice"]["before"], report["alice"]["after"]
    assert before["talkPartner"]["lastMessage"].startswith("hello ")
    assert before["conversation"]["messages"] == 1
    # After it, with nothing but the mutation sent: the talk partner row and the conversation
    # (either way it was fetched) show the new message.
    assert report["alice"]["requestsFromSend"] == ["Send"]
    assert report["alice"]["operationsFromSend"] == ["Send"]
    assert after["talkPartner"] == {**row, "unreadCount": 1}
    assert after["conversation"] == {"unreadCount": 1, "messages": 2, "first": newest, "cursorsUnique": True}

    # The same send without the links leaves alice's screens as they were: it is the links
    # that update them.
    bare = report["aliceWithoutLinks"]
    assert bare["requestsFromSend"] == bare["operationsFromSend"] == ["SendWithoutLinks"]
    assert bare["after"] == bare["before"]
    assert bare["after"]["conversation"]["first"] == newest

    # Bob's device with the links: the messageReceived event alone (no request, no operation
    # since his screens loaded) brings the new message, the last message and one unread.
    bob_side = report["bob"]
    assert bob_side["heard"] is True
    assert bob_side["requestsAfterBaseline"] == bob_side["operationsAfterBaseline"] == []
    assert bob_side["before"]["talkPartner"]["unreadCount"] == 0
    assert bob_side["before"]["conversation"]["messages"] == 1
    assert bob_side["after"]["talkPartner"] == {**row, "unreadCount": 1}
    assert bob_side["after"]["conversation"] == {
        "unreadCount": 1,
        "messages": 2,
        "first": newest,
        "cursorsUnique": True,
    }
    # The cached talk partners list keeps the order it was fetched in (carol's probes were
    # newest then): the payload updates rows, not the list. The rows' lastMessageAt, which
    # the cache holds, orders them as the gateway does now.
    fresh = await api.ok(TALK_PARTNERS, token=bob.token)
    now = [p["partner"]["login"] for p in fresh["me"]["talkPartners"]["nodes"]]
    assert now == [alice.login, carol.login]
    assert bob_side["before"]["order"] == bob_side["after"]["order"] == [carol.login, alice.login]
    assert bob_side["after"]["orderByLastMessageAt"] == now

    # Bob's device without the links heard the message, and its screens are unchanged.
    bob_bare = report["bobWithoutLinks"]
    assert bob_bare["heard"] is True
    assert bob_bare["requestsAfterBaseline"] == bob_bare["operationsAfterBaseline"] == []
    assert bob_bare["after"] == bob_bare["before"]

    # Ids are unique across types: an email's summary and the email are two entities...
    keys = report["keys"]
    assert keys["summary"]["typename"] == "EmailSummary"
    assert keys["email"]["typename"] == "Email"
    assert keys["summary"]["id"] != keys["email"]["id"]
    assert keys["inCache"] == [True, True]
    # ...the inbox reads back as fetched, also from a cache keyed by id alone (Relay's model)...
    assert keys["readBack"] is True
    assert keys["idOnlyReadBack"] is True
    # ...and no id in any of the caches is used by two types.
    for cache in ("inbox", "messages", "bob"):
        assert keys[cache]["idsUsedByTwoTypes"] == []
        assert keys[cache]["entities"] > 0

    # node(id:) of the sent message is the cached entity: same key, no new entity, unchanged.
    assert report["node"] == {
        "typename": "DirectMessage",
        "sameKey": True,
        "newEntities": 0,
        "unchanged": True,
    }

    # Rooms: alice's postRoomMessage selecting its room, and the roomMessages event on bob's
    # device, bring the new message into both cached room pages with no other operation.
    room = report["room"]
    posted = {"id": room["posted"]["id"], "content": room["posted"]["content"]}
    assert room["alice"]["requestsFromPost"] == room["alice"]["operationsFromPost"] == ["Post"]
    assert room["bob"]["requestsAfterBaseline"] == room["bob"]["operationsAfterBaseline"] == []
    for side in ("alice", "bob"):
        before, after = room[side]["before"], room[side]["after"]
        read_from_cache_only(before)
        read_from_cache_only(after)
        assert before["first"] != posted
        assert after == {**before, "messages": before["messages"] + 1, "first": posted}
        assert after["participantCount"] == 2


PAGE = "id unreadCount messages(first: 50) { edges { cursor node { id content } } }"
SEND = "mutation($to: String!, $content: String!) { sendMessage(to: $to, content: $content) { %s } }"
SEND_BARE = SEND % "id content sentAt"
SEND_LINKED = SEND % (
    f"id content sentAt conversation {{ {PAGE} }} talkPartner {{ id lastMessage lastMessageAt unreadCount }}"
)
ROOM_PAGE = (
    "id name participantCount "
    "messages(first: 50) { edges { cursor node { id content systemMessage author { id login } } } }"
)
POST = (
    "mutation($room: String!, $content: String!) { postRoomMessage(room: $room, content: $content) { %s } }"
)
POST_BARE = POST % "id content postedAt"
POST_LINKED = POST % f"id content postedAt room {{ {ROOM_PAGE} }}"


async def test_what_the_links_cost(api: Api) -> None:
    """The links the cache needs cost a fixed number of statements on top of the send, the
    same for a short conversation or room and for one whose page of 50 is full."""
    alice = await api.sign_up("costa")
    bob = await api.sign_up("costb")
    room = f"cost-{alice.login[-8:]}"
    await api.ok(
        "mutation($name: String!) { createRoom(name: $name) { id } }", {"name": room}, token=alice.token
    )

    async def costs() -> tuple[int, int, int, int]:
        sends = [
            await api.call(query, {"to": bob.login, "content": "cost"}, token=alice.token)
            for query in (SEND_BARE, SEND_LINKED)
        ]
        posts = [
            await api.call(query, {"room": room, "content": "cost"}, token=alice.token)
            for query in (POST_BARE, POST_LINKED)
        ]
        for response in (*sends, *posts):
            assert not response.errors, response.errors
        linked = sends[1].result["sendMessage"]["conversation"]["messages"]["edges"]
        assert linked[0]["node"]["id"] == sends[1].result["sendMessage"]["id"]
        return sends[0].statements, sends[1].statements, posts[0].statements, posts[1].statements

    # The conversation exists before anything is measured.
    await api.ok(SEND_BARE, {"to": bob.login, "content": "first"}, token=alice.token)
    short = await costs()
    for n in range(60):
        await api.ok(SEND_BARE, {"to": bob.login, "content": f"fill {n}"}, token=alice.token)
        await api.ok(POST_BARE, {"room": room, "content": f"fill {n}"}, token=alice.token)
    full = await costs()
    print(f"statements (send, send with links, post, post with room page): short {short}, full {full}")
    assert short == full
    send, send_linked, post, post_linked = full
    # The talk partner row (which holds the unread count too) and the conversation's page
    # (its bucket index and one bucket's slice).
    assert send_linked - send == 3
    # The participant check, the room's page (bucket index and slice), its authors, and the
    # participant count.
    assert post_linked - post == 5
