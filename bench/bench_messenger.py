"""Messenger: the main view, a conversation page and sends under concurrency, through the
gateway, beside the same work issued directly through the driver (the stores, no GraphQL).

Run: ``.venv/bin/python -m bench.bench_messenger`` (or ``scripts/bench``).

Sends are measured twice: all senders writing to ONE recipient (every unread
increment is a lightweight transaction on the same partition, the worst case)
and spread over distinct recipients.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bench.harness import (
    counted,
    floor_read,
    floor_under_test,
    gateway_under_test,
    measure,
    report,
    side_by_side,
)
from gateway.messenger.records import conversation_id
from gateway.messenger.service import MessengerService
from gateway.messenger.store import MessengerStore
from gateway.users.store import SessionStore, UserStore

REQUESTS = 1000
SEND_REQUESTS = 600
CONCURRENCY = 32
PARTNERS = 120

MAIN_VIEW = """query($after: String) { me { talkPartners(first: 50, after: $after) {
  edges { cursor node { partner { login firstname } lastMessage lastMessageAt unreadCount unreadSince } }
  pageInfo { hasNextPage endCursor }
} } }"""
CONVERSATION = """query($with: String!) { me { conversation(with: $with) {
  unreadCount messages(first: 50) { edges { cursor node { id content sentAt sender { login } } } }
} } }"""
SEND = """mutation($to: String!, $content: String!) {
  sendMessage(to: $to, content: $content) { id sentAt }
}"""


async def main() -> None:
    async with gateway_under_test() as target, floor_under_test(target) as floor:
        owner = "benchowner"
        owner_token = await target.sign_up(owner)
        logins = [f"benchpartner{n}" for n in range(PARTNERS)]
        tokens = await asyncio.gather(*(target.sign_up(login) for login in logins))
        for token in tokens:
            await target.graphql(SEND, {"to": owner, "content": "hello from a partner"}, token)
        for n in range(60):
            await target.graphql(SEND, {"to": logins[0], "content": f"history {n}"}, owner_token)

        store = MessengerStore(target.db, target.settings)
        messenger = MessengerService(store)
        users = UserStore(target.db, target.settings)
        sessions = SessionStore(target.db, target.settings)

        async def main_view_raw() -> None:
            login = await sessions.login_of(owner_token)
            assert login is not None
            page = await store.partners_page(login, size=50, cursor=None)
            await users.get_many(record.partner for _, record in page.items)

        async def conversation_raw() -> None:
            login = await sessions.login_of(owner_token)
            assert login is not None
            await users.get_many([login, logins[0]])
            await store.partner(login, logins[0])
            page = await store.messages_page(conversation_id(login, logins[0]), size=50, cursor=None)
            others = {record.sender for _, record in page.items} - {login, logins[0]}
            if others:
                await users.get_many(others)

        def send_to_one(i: int) -> Any:
            return target.graphql(SEND, {"to": owner, "content": f"bench {i}"}, tokens[i % PARTNERS])

        def send_spread(i: int) -> Any:
            sender = i % PARTNERS
            return target.graphql(
                SEND, {"to": logins[(sender + 1) % PARTNERS], "content": f"bench {i}"}, tokens[sender]
            )

        async def send_raw(i: int) -> None:
            login = await sessions.login_of(tokens[i % PARTNERS])
            assert login is not None
            await users.get_many([login, owner])
            await messenger.send(login, owner, f"raw {i}")

        first_page = await target.graphql(MAIN_VIEW, {"after": None}, owner_token)
        second_cursor = first_page["data"]["me"]["talkPartners"]["pageInfo"]["endCursor"]
        main_rows = [
            *await side_by_side(
                (
                    f"gateway: me.talkPartners(first: 50), page 1 of {PARTNERS} partners",
                    lambda _: target.graphql(MAIN_VIEW, {"after": None}, owner_token),
                ),
                (
                    "gateway: me.talkPartners(first: 50), page 2",
                    lambda _: target.graphql(MAIN_VIEW, {"after": second_cursor}, owner_token),
                ),
                (
                    "driver:  session + activity slice + pairs IN + users IN",
                    lambda _: counted(main_view_raw()),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            *await side_by_side(
                (
                    "gateway: me.conversation.messages(first: 50)",
                    lambda _: target.graphql(CONVERSATION, {"with": logins[0]}, owner_token),
                ),
                (
                    "floor:   HTTP + the same stores, no GraphQL",
                    lambda _: floor_read(floor, CONVERSATION, {"with": logins[0]}, owner_token),
                ),
                ("driver:  session + users + row + page", lambda _: counted(conversation_raw())),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
        ]
        report(f"messenger reads ({REQUESTS} requests, concurrency {CONCURRENCY})", main_rows)

        send_rows = [
            *await side_by_side(
                (f"gateway: sendMessage, {PARTNERS} senders -> 1", send_to_one),
                (f"driver:  service.send, {PARTNERS} senders -> 1", lambda i: counted(send_raw(i))),
                requests=SEND_REQUESTS,
                concurrency=CONCURRENCY,
            ),
            await measure(
                "gateway: sendMessage, spread over recipients",
                send_spread,
                requests=SEND_REQUESTS,
                concurrency=CONCURRENCY,
            ),
        ]
        report(f"messenger sends ({SEND_REQUESTS} requests, concurrency {CONCURRENCY})", send_rows)


if __name__ == "__main__":
    asyncio.run(main())
