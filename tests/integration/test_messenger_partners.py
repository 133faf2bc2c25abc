"""Me.talkPartners as a connection over the activity index, through a real GraphQL client:
recency order across pages, stability while messages arrive, statement counts, the cost of a
send, racing sends in one pair, and the backfill of keyspaces written before the index."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiohttp import web

from gateway.db.clock import micros_of, new_timeuuid
from gateway.messenger.activity_store import slot_of_row, slot_time
from gateway.messenger.records import MessageRecord
from gateway.messenger.store import MessengerStore
from gateway.server.app import SERVICES
from tests.support.cli import run_cli
from tests.support.client import Account, Api
from tests.support.messenger import SEND, send, store_of

PAGE = """query($first: Int, $after: String) { me { talkPartners(first: $first, after: $after) {
  edges { cursor node { partner { login } lastMessage lastMessageAt unreadCount } }
  pageInfo { hasNextPage endCursor }
} } }"""

#: 2026-01-01T00:00:00Z in nanoseconds; test messages are spaced a slot and more apart from it.
BASE_NS = 1_767_225_600_000_000_000
MINUTE_NS = 61 * 1_000_000_000


async def page(api: Api, owner: Account, first: int, after: str | None = None) -> dict[str, Any]:
    data = await api.ok(PAGE, {"first": first, "after": after}, token=owner.token)
    return data["me"]["talkPartners"]


async def all_pages(api: Api, owner: Account, first: int) -> list[list[str]]:
    pages: list[list[str]] = []
    after = None
    while True:
        current = await page(api, owner, first, after)
        pages.append([edge["node"]["partner"]["login"] for edge in current["edges"]])
        if not current["pageInfo"]["hasNextPage"]:
            return pages
        after = current["pageInfo"]["endCursor"]


PAGE_BACK = """query($last: Int, $before: String) { me { talkPartners(last: $last, before: $before) {
  edges { cursor node { partner { login } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
} } }"""


async def owner_with_history(
    api: Api, app: web.Application, count: int
) -> tuple[Account, list[str], dict[str, Account]]:
    """An owner whose ``count`` partners each last wrote a minute after the previous one.

    Returns the partners most recent first. Messages are written with ids in the
    past, one slot apart, so the expected order is exact.
    """
    owner = await api.sign_up("owner")
    partners = await asyncio.gather(*(api.sign_up("pal") for _ in range(count)))
    store = store_of(app)
    for n, partner in enumerate(partners):
        sender, recipient = (partner.login, owner.login) if n % 2 else (owner.login, partner.login)
        await store.write_message(
            MessageRecord(new_timeuuid(BASE_NS + n * MINUTE_NS), sender, recipient, f"message {n}")
        )
    return owner, [p.login for p in reversed(partners)], {p.login: p for p in partners}


async def activity_rows(app: web.Application, owner: str) -> list[dict[str, Any]]:
    db = app[SERVICES].db
    result = await db.execute(
        "SELECT slot, partner FROM talk_partners_by_activity WHERE owner = ? LIMIT 1000", (owner,)
    )
    return result.rows


@pytest.mark.parametrize("first", [5, 7, 10])
async def test_pages_walk_every_partner_in_recency_order_once(
    api: Api, app: web.Application, first: int
) -> None:
    owner, expected, _ = await owner_with_history(api, app, 23)
    pages = await all_pages(api, owner, first)
    assert len(pages) >= 3
    assert all(len(p) == first for p in pages[:-1])
    assert [login for p in pages for login in p] == expected


async def test_paging_stays_stable_while_messages_arrive(api: Api, app: web.Application) -> None:
    owner, expected, accounts = await owner_with_history(api, app, 23)
    first = await page(api, owner, 5)
    seen = [edge["node"]["partner"]["login"] for edge in first["edges"]]
    assert seen == expected[:5]

    # Someone not yet paged to and someone already seen write now: both move to the top.
    unseen_mover, seen_mover = expected[15], expected[2]
    await send(api, accounts[unseen_mover], owner.login, f"hello from {unseen_mover}")
    await send(api, accounts[seen_mover], owner.login, f"hello from {seen_mover}")

    rest: list[str] = []
    after = first["pageInfo"]["endCursor"]
    while after is not None:
        current = await page(api, owner, 5, after)
        rest.extend(edge["node"]["partner"]["login"] for edge in current["edges"])
        after = current["pageInfo"]["endCursor"] if current["pageInfo"]["hasNextPage"] else None
    # No repeat; the partner who moved above the cursor is not on the later pages.
    assert rest == [login for login in expected[5:] if login != unseen_mover]
    fresh = await page(api, owner, 3)
    assert [e["node"]["partner"]["login"] for e in fresh["edges"]] == [seen_mover, unseen_mover, expected[0]]
    assert fresh["edges"][0]["node"]["lastMessage"] == f"hello from {seen_mover}"


async def test_a_page_costs_the_same_statements_for_5_and_50(api: Api) -> None:
    owner = await api.sign_up("owner")
    others = await asyncio.gather(*(api.sign_up("p") for _ in range(60)))
    await asyncio.gather(*(send(api, other, owner.login, f"hi from {other.login}") for other in others))
    small = await api.call(PAGE, {"first": 5}, token=owner.token)
    large = await api.call(PAGE, {"first": 50}, token=owner.token)
    assert len(small.result["me"]["talkPartners"]["edges"]) == 5
    assert len(large.result["me"]["talkPartners"]["edges"]) == 50
    # All sixty wrote within one slot, which every slice cuts: activity slice + that slot whole
    # (to order it by the last messages) + IN read of the pairs + one batched user read (the
    # session is known to the process since the sign-up).
    assert small.statements == large.statements == 4
    deeper = await api.call(
        PAGE,
        {"first": 50, "after": small.result["me"]["talkPartners"]["pageInfo"]["endCursor"]},
        token=owner.token,
    )
    assert deeper.statements == 4
    # Each partner's conversation answers from the page's rows and users: nothing more is read.
    conversations = await api.call(
        """{ me { talkPartners(first: 50) { nodes { partner { login }
          conversation { id unreadCount unreadSince with { login firstname } } } } } }""",
        token=owner.token,
    )
    nodes = conversations.result["me"]["talkPartners"]["nodes"]
    assert all(n["conversation"]["with"]["login"] == n["partner"]["login"] for n in nodes)
    assert all(n["conversation"]["unreadCount"] == 1 and n["conversation"]["unreadSince"] for n in nodes)
    assert conversations.statements == 4


async def test_a_send_costs_what_it_cost_before_the_index(api: Api) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    # First send of a new pair: both users, the unread row (which also gives the last
    # message), the unread LWT, the logged batch (the session is known to the process).
    first = await api.call(SEND, {"to": bob.login, "content": "one"}, token=alice.token)
    # Later sends: the unread count and last message are known to the process.
    later = await api.call(SEND, {"to": bob.login, "content": "two"}, token=alice.token)
    back = await api.call(SEND, {"to": alice.login, "content": "three"}, token=bob.token)
    assert (first.statements, later.statements) == (4, 3)
    assert back.statements <= 5
    assert first.extensions["cql"]["lwtRetries"] == later.extensions["cql"]["lwtRetries"] == 0


async def test_racing_sends_in_one_pair_leave_one_current_row(
    api: Api, app: web.Application, make_server: Any
) -> None:
    other_api, other_app = await make_server()
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    # Messages a slot apart, so every send moves the pair, written by two processes that
    # do not see each other's sends: first in turn (each leaves the other's row behind),
    # then all at once.
    stores = [store_of(app), store_of(other_app)]
    pairs = [(alice.login, bob.login), (bob.login, alice.login)]
    records = [
        MessageRecord(new_timeuuid(BASE_NS + n * MINUTE_NS), *pairs[n % 2], f"m{n}") for n in range(12)
    ]
    for n, record in enumerate(records[:4]):
        await stores[n % 2].write_message(record)
    assert len(await activity_rows(app, bob.login)) > 1
    await asyncio.gather(*(stores[n % 2].write_message(r) for n, r in enumerate(records[4:])))
    # And real sends through both gateways on top.
    await asyncio.gather(
        *(
            (api if n % 2 else other_api).ok(
                SEND, {"to": bob.login, "content": f"live {n}", "key": None}, token=alice.token
            )
            for n in range(10)
        )
    )
    newest = (await page(api, bob, 10))["edges"]
    assert [e["node"]["partner"]["login"] for e in newest] == [alice.login]
    assert [e["node"]["partner"]["login"] for e in (await page(other_api, alice, 10))["edges"]] == [bob.login]

    store: MessengerStore = store_of(app)
    last = (await store.partner(bob.login, alice.login)).last_message
    assert last is not None and newest[0]["node"]["lastMessage"] == last.content
    slot = store.activity.slot_of(last.id)
    for owner in (alice.login, bob.login):
        current = [r for r in await activity_rows(app, owner) if slot_of_row(r["slot"]) == slot]
        assert len(current) == 1
    # Readers deleted whatever stale rows the race left.
    await store.activity.drain()
    await store_of(other_app).activity.drain()
    assert len(await activity_rows(app, bob.login)) == 1
    assert len(await activity_rows(app, alice.login)) == 1


async def test_backfill_indexes_partners_written_before_the_index(api: Api, app: web.Application) -> None:
    owner = await api.sign_up("old")
    partners = await asyncio.gather(*(api.sign_up("oldpal") for _ in range(12)))
    db = app[SERVICES].db
    expected: list[str] = []
    for n, partner in enumerate(partners):
        message_id = new_timeuuid(BASE_NS + n * MINUTE_NS)
        for a, b in ((owner.login, partner.login), (partner.login, owner.login)):
            await db.execute(
                "UPDATE talk_partners USING TIMESTAMP ? SET last_message = ?"
                " WHERE owner = ? AND row_kind = 0 AND partner = ? AND client_message_id = ''",
                (micros_of(message_id), (message_id, partner.login, f"old {n}"), a, b),
            )
        expected.insert(0, partner.login)
    assert (await page(api, owner, 10))["edges"] == []

    settings = app[SERVICES].settings
    for _ in range(2):  # idempotent
        status, output = await run_cli(settings, "backfill", "messenger")
        assert status == 0, output
        assert "messenger" in output
    assert [login for p in await all_pages(api, owner, 5) for login in p] == expected
    assert (await page(api, partners[0], 5))["edges"][0]["node"]["partner"]["login"] == owner.login


async def test_a_page_short_of_current_rows_reads_on(api: Api, app: web.Application) -> None:
    owner, expected, _ = await owner_with_history(api, app, 12)
    db = app[SERVICES].db
    # Rows of the last 10 partners at slots their last message is not in, above all
    # others, written before any of their messages.
    for n, login in enumerate(expected[:10]):
        await db.execute(
            "INSERT INTO talk_partners_by_activity (owner, slot, partner) VALUES (?, ?, ?) USING TIMESTAMP ?",
            (owner.login, slot_time((BASE_NS // 1_000_000) + (100 + n) * 61_000), login, BASE_NS // 1000),
        )
    response = await api.call(PAGE, {"first": 3}, token=owner.token)
    edges = response.result["me"]["talkPartners"]["edges"]
    assert [e["node"]["partner"]["login"] for e in edges] == expected[:3]
    # The first slice (3 + 1 + 4 rows) held only stale rows: one more slice and IN read.
    assert response.statements == 5
    await store_of(app).activity.drain()
    assert len(await activity_rows(app, owner.login)) == 12
    again = await api.call(PAGE, {"first": 3}, token=owner.token)
    assert again.statements == 3
    assert [login for p in await all_pages(api, owner, 5) for login in p] == expected


@pytest.mark.parametrize(
    ("variables", "code", "field"),
    [
        ({"first": 5, "after": "not a cursor!"}, "BAD_USER_INPUT", "after"),
        ({"first": 5, "after": "AAAAAAAAAAA"}, "BAD_USER_INPUT", "after"),  # a slot and no login
        ({"first": -1}, "BAD_USER_INPUT", "first"),
        ({"first": 101}, "QUERY_TOO_COMPLEX", "first"),
    ],
)
async def test_page_arguments_are_validated(
    api: Api, variables: dict[str, Any], code: str, field: str
) -> None:
    owner = await api.sign_up("owner")
    error = await api.error(PAGE, variables, token=owner.token)
    assert error["extensions"]["code"] == code
    assert error["extensions"]["field"] == field


async def test_an_empty_page_and_a_zero_page(api: Api) -> None:
    owner = await api.sign_up("owner")
    assert await page(api, owner, 5) == {"edges": [], "pageInfo": {"hasNextPage": False, "endCursor": None}}
    other = await api.sign_up("other")
    await send(api, other, owner.login, "hi")
    assert await page(api, owner, 0) == {"edges": [], "pageInfo": {"hasNextPage": True, "endCursor": None}}


async def test_partners_who_write_within_one_second_page_newest_first_at_any_size(
    api: Api, app: web.Application
) -> None:
    """Six partners write within one second, inside one activity slot: the main view is
    still exact across every page boundary, and each page costs the same statements."""
    owner = await api.sign_up("exact")
    partners = await asyncio.gather(*(api.sign_up("sec") for _ in range(6)))
    store = store_of(app)
    # The start of the current activity slot, so the six times fall inside one slot whatever
    # the clock reads when the test runs.
    slot_ns = store.activity.slot_ms * 1_000_000
    now_ns = time.time_ns() // slot_ns * slot_ns
    # Written out of order of time, and logins sort apart from times, so neither the
    # write order nor the partition's (slot, partner) order matches the view.
    order = [3, 0, 5, 1, 4, 2]
    for n in order:
        # 0.1 s apart, all within one second of the slot's start.
        message_id = new_timeuuid(now_ns + n * 100_000_000)
        await store.write_message(MessageRecord(message_id, partners[n].login, owner.login, f"m{n}"))
    expected = [partners[n].login for n in reversed(range(6))]
    for first in (1, 2, 50):
        seen: list[str] = []
        costs: list[int] = []
        after = None
        while True:
            response = await api.call(PAGE, {"first": first, "after": after}, token=owner.token)
            connection = response.result["me"]["talkPartners"]
            seen.extend(edge["node"]["partner"]["login"] for edge in connection["edges"])
            costs.append(response.statements)
            if not connection["pageInfo"]["hasNextPage"]:
                break
            after = connection["pageInfo"]["endCursor"]
        assert seen == expected, first
        # Each page: session, activity slice (and the slot whole when the slice is all of it),
        # IN read, users; the last may read one more (empty) slice to learn it is the last.
        assert len(set(costs[:-1])) <= 1 and max(costs[:-1] or [4]) <= 5 and costs[-1] <= 6, (first, costs)


async def test_the_main_view_pages_back_from_a_cursor(api: Api, app: web.Application) -> None:
    owner, expected, _ = await owner_with_history(api, app, 12)
    tail = await api.call(PAGE_BACK, {"last": 5}, token=owner.token)
    connection = tail.result["me"]["talkPartners"]
    assert [e["node"]["partner"]["login"] for e in connection["edges"]] == expected[-5:]
    assert connection["pageInfo"]["hasPreviousPage"] is True
    assert connection["pageInfo"]["hasNextPage"] is False
    before = connection["pageInfo"]["startCursor"]
    upper = await api.call(PAGE_BACK, {"last": 5, "before": before}, token=owner.token)
    connection = upper.result["me"]["talkPartners"]
    assert [e["node"]["partner"]["login"] for e in connection["edges"]] == expected[2:7]
    assert connection["pageInfo"]["hasPreviousPage"] is True
    assert connection["pageInfo"]["hasNextPage"] is True
    top = await api.call(
        PAGE_BACK, {"last": 5, "before": connection["pageInfo"]["startCursor"]}, token=owner.token
    )
    connection = top.result["me"]["talkPartners"]
    assert [e["node"]["partner"]["login"] for e in connection["edges"]] == expected[:2]
    assert connection["pageInfo"]["hasPreviousPage"] is False
