"""Queries and helpers of the messenger tests."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from gql import GraphQLRequest

from gateway.messenger.events import user_messages_channel
from gateway.messenger.store import MessengerStore
from gateway.server.app import SERVICES
from tests.support.client import Account, Api, Response

SEND = """mutation($to: String!, $content: String!, $key: String) {
  sendMessage(to: $to, content: $content, clientMessageId: $key) {
    id content sentAt conversationId clientMessageId sender { login } recipient { login }
  }
}"""
MARK_READ = """mutation($with: String!) {
  markConversationRead(with: $with) { partner { login } unreadCount unreadSince lastMessage }
}"""
MAIN_VIEW = """{ me { talkPartners(first: 100) { nodes {
  partner { login firstname } lastMessage lastMessageAt lastMessageId lastMessageSender { login }
  unreadCount unreadSince conversation { id unreadCount }
} } } }"""
CONVERSATION = """query($with: String!, $first: Int, $after: String) { me { conversation(with: $with) {
  id with { login } unreadCount unreadSince
  messages(first: $first, after: $after) {
    edges { cursor node { id content sentAt sender { login } recipient { login } } }
    pageInfo { hasNextPage endCursor }
  }
} } }"""


async def send(api: Api, sender: Account, to: str, content: str, key: str | None = None) -> dict[str, Any]:
    data = await api.ok(SEND, {"to": to, "content": content, "key": key}, token=sender.token)
    return data["sendMessage"]


async def partners(api: Api, account: Account) -> list[dict[str, Any]]:
    return (await api.ok(MAIN_VIEW, token=account.token))["me"]["talkPartners"]["nodes"]


async def conversation(
    api: Api, account: Account, other: str, first: int | None = None, after: str | None = None
) -> dict[str, Any]:
    variables = {"with": other, "first": first, "after": after}
    return (await api.ok(CONVERSATION, variables, token=account.token))["me"]["conversation"]


async def all_message_ids(api: Api, account: Account, other: str) -> list[str]:
    ids: list[str] = []
    after = None
    while True:
        page = (await conversation(api, account, other, first=100, after=after))["messages"]
        ids.extend(edge["node"]["id"] for edge in page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            return ids
        after = page["pageInfo"]["endCursor"]


def store_of(app: web.Application) -> MessengerStore:
    return app[SERVICES].store(MessengerStore)


def unread_of(view: list[dict[str, Any]]) -> dict[str, int]:
    return {p["partner"]["login"]: p["unreadCount"] for p in view}


async def concurrent_sends_count_exactly(api: Api, other_api: Api) -> None:
    """Ten senders send thirty messages each, all at once, alternating between two gateways:
    every message is stored once and every unread count is exact."""
    instances = itertools.cycle([api, other_api])
    recipient = await api.sign_up("popular")
    senders = await asyncio.gather(*(api.sign_up(f"fan{n}") for n in range(10)))

    calls = [
        next(instances).call(SEND, {"to": recipient.login, "content": f"{n} from {s.login}"}, token=s.token)
        for s in senders
        for n in range(30)
    ]
    responses: list[Response] = await asyncio.gather(*calls)
    assert [r.errors for r in responses if r.errors] == []
    ids = [r.result["sendMessage"]["id"] for r in responses]
    assert len(set(ids)) == 300

    view = await partners(other_api, recipient)
    assert unread_of(view) == {s.login: 30 for s in senders}
    assert all(p["unreadSince"] is not None for p in view)
    for sender in senders[:3]:
        assert len(await all_message_ids(api, recipient, sender.login)) == 30


MESSAGE_RECEIVED = """subscription { messageReceived {
  id content sentAt conversationId sender { login firstname } recipient { login }
} }"""

EVENT_TIMEOUT = 20


class Listener:
    """One open connection of ``account`` with a running ``messageReceived`` subscription."""

    def __init__(self, account: Account) -> None:
        self.account = account
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def next(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.events.get(), EVENT_TIMEOUT)


@contextlib.asynccontextmanager
async def listening(api: Api, app: web.Application, *accounts: Account) -> AsyncIterator[list[Listener]]:
    """Subscribe once per account given (an account given twice has two devices),
    and return once the gateway has registered every subscription."""
    live = app[SERVICES].live
    assert live is not None
    expected: dict[str, int] = {}
    for account in accounts:
        channel = user_messages_channel(account.login)
        expected[channel] = expected.get(channel, 0) + 1
    baseline = {channel: live.followers(channel) for channel in expected}
    listeners = [Listener(account) for account in accounts]

    async def run(listener: Listener) -> None:
        async with api.websocket(listener.account.token) as session:
            async for result in session.subscribe(GraphQLRequest(MESSAGE_RECEIVED)):
                await listener.events.put(result["messageReceived"])

    tasks = [asyncio.create_task(run(listener)) for listener in listeners]
    try:
        async with asyncio.timeout(EVENT_TIMEOUT):
            while any(live.followers(c) < baseline[c] + n for c, n in expected.items()):
                for task in tasks:
                    if task.done():
                        task.result()
                await asyncio.sleep(0.02)
        yield listeners
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
