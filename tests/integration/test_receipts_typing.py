"""Read receipts and typing indicators between talk partners: a receipt when a partner
reads what was unread, stored in the reader's partner's row and told live; typing told
live, never stored, stopping by itself; strangers hear nothing of either."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from gateway.messenger.events import receipts_channel, typing_channel
from gateway.server.app import SERVICES
from tests.conftest import ServerFactory
from tests.support.client import Account, Api
from tests.support.messenger import MARK_READ, send
from tests.support.presence import online
from tests.support.ws_protocol import WAIT, Socket

RECEIPTS = """subscription { conversationRead {
  by { login } readAt conversation { id unreadCount partnerReadAt with { login } }
} }"""
TYPING = "subscription { typing { from { login } typing at } }"
SET_TYPING = "mutation($w: String!, $t: Boolean) { setTyping(with: $w, typing: $t) }"
READ_AT = "query($w: String!) { me { conversation(with: $w) { id partnerReadAt } } }"
MARK = "mutation($w: String!) { markConversationRead(with: $w) { unreadCount } }"
MAIN_VIEW = (
    "{ me { talkPartners(first: 20) { nodes { partner { login } conversation { id unreadCount %s } } } } }"
)


async def _until_following(app: web.Application, channel: str) -> None:
    hub = app[SERVICES].live
    assert hub is not None
    for _ in range(int(WAIT * 20)):
        if hub.followers(channel):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"nobody follows {channel}")


async def _event(socket: Socket, field: str) -> dict[str, Any]:
    message = await asyncio.wait_for(socket.receive(), WAIT)
    assert message is not None and message["type"] == "next", message
    assert "errors" not in message["payload"], message
    event: dict[str, Any] = message["payload"]["data"][field]
    return event


async def _pair(api: Api) -> tuple[Account, Account]:
    alice = await api.sign_up("rcpt")
    bob = await api.sign_up("rcpt")
    return alice, bob


async def test_reading_what_was_unread_sends_the_writer_a_receipt(api: Api, app: web.Application) -> None:
    alice, bob = await _pair(api)
    await send(api, alice, bob.login, "one")
    await send(api, alice, bob.login, "two")
    never = await api.ok(READ_AT, {"w": bob.login}, token=alice.token)
    assert never["me"]["conversation"]["partnerReadAt"] is None

    async with online(api, alice) as live:
        await live.start(RECEIPTS)
        await _until_following(app, receipts_channel(alice.login))
        now = datetime.now(UTC)
        before = now.replace(microsecond=now.microsecond // 1000 * 1000)  # DateTime holds ms
        marked = await api.call(MARK, {"w": alice.login}, token=bob.token)
        assert marked.result["markConversationRead"]["unreadCount"] == 0
        receipt = await _event(live, "conversationRead")
        read_at = datetime.fromisoformat(receipt["readAt"])
        assert before <= read_at <= datetime.now(UTC)
        assert receipt["by"] == {"login": bob.login}
        assert receipt["conversation"]["with"] == {"login": bob.login}
        assert receipt["conversation"]["partnerReadAt"] == receipt["readAt"]
        stored = await api.ok(READ_AT, {"w": bob.login}, token=alice.token)
        assert stored["me"]["conversation"] == {
            "id": receipt["conversation"]["id"],
            "partnerReadAt": receipt["readAt"],
        }

        # Nothing unread: nothing to tell, nothing written.
        empty = await api.call(MARK, {"w": alice.login}, token=bob.token)
        # With something unread, two more: the receipt written, the count zeroed.
        assert marked.statements == empty.statements + 2
        now = datetime.now(UTC)
        quiet_until = now.replace(microsecond=now.microsecond // 1000 * 1000)
        await send(api, alice, bob.login, "three")
        await api.ok(MARK_READ, {"with": alice.login}, token=bob.token)
        next_receipt = await _event(live, "conversationRead")
        assert datetime.fromisoformat(next_receipt["readAt"]) >= quiet_until

    # Bob's own view of the conversation holds Alice's receipt, not his.
    his = await api.ok(READ_AT, {"w": alice.login}, token=bob.token)
    assert his["me"]["conversation"]["partnerReadAt"] is None


async def test_receipts_come_with_the_main_view_at_no_extra_statement(api: Api) -> None:
    viewer = await api.sign_up("rcpt")
    readers = [await api.sign_up("rcpt") for _ in range(4)]
    for reader in readers:
        await send(api, viewer, reader.login, "read me")
    for reader in readers[:2]:
        await api.ok(MARK_READ, {"with": viewer.login}, token=reader.token)
    with_receipts = await api.call(MAIN_VIEW % "partnerReadAt", token=viewer.token)
    without = await api.call(MAIN_VIEW % "", token=viewer.token)
    assert with_receipts.statements == without.statements
    read = {
        node["partner"]["login"]
        for node in with_receipts.result["me"]["talkPartners"]["nodes"]
        if node["conversation"]["partnerReadAt"] is not None
    }
    assert read == {readers[0].login, readers[1].login}


async def test_typing_reaches_the_partner_stops_when_told_and_lapses_by_itself(
    make_server: ServerFactory,
) -> None:
    api, app = await make_server(typing_seconds=0.5)
    alice, bob = await _pair(api)
    await send(api, alice, bob.login, "hi")
    async with online(api, bob) as live:
        await live.start(TYPING)
        await _until_following(app, typing_channel(bob.login))

        assert await api.ok(SET_TYPING, {"w": bob.login}, token=alice.token) == {"setTyping": True}
        started = await _event(live, "typing")
        assert started["from"] == {"login": alice.login} and started["typing"] is True
        stop = await api.ok(SET_TYPING, {"w": bob.login, "t": False}, token=alice.token)
        assert stop == {"setTyping": True}
        stopped = await _event(live, "typing")
        assert stopped["typing"] is False and stopped["at"] >= started["at"]

        # Started again and never renewed: the gateway says it stopped.
        await api.ok(SET_TYPING, {"w": bob.login}, token=alice.token)
        assert (await _event(live, "typing"))["typing"] is True
        lapsed = await _event(live, "typing")
        assert lapsed["from"] == {"login": alice.login} and lapsed["typing"] is False


async def test_a_stranger_typing_is_never_heard(api: Api, app: web.Application) -> None:
    alice, bob = await _pair(api)
    stranger = await api.sign_up("rcpt")
    await send(api, alice, bob.login, "hi")
    async with online(api, bob) as live:
        await live.start(TYPING)
        await _until_following(app, typing_channel(bob.login))
        # True for the stranger too: the answer tells nothing of who talks with whom.
        assert await api.ok(SET_TYPING, {"w": bob.login}, token=stranger.token) == {"setTyping": True}
        assert await api.ok(SET_TYPING, {"w": "nosuchuser42"}, token=stranger.token) == {"setTyping": True}
        await api.ok(SET_TYPING, {"w": bob.login}, token=alice.token)
        first = await _event(live, "typing")
        assert first["from"] == {"login": alice.login}


async def test_typing_arguments_and_rate_are_checked(make_server: ServerFactory) -> None:
    api, _ = await make_server(rate_typing="2/m")
    alice, bob = await _pair(api)
    await send(api, alice, bob.login, "hi")
    bad = await api.call(SET_TYPING, {"w": "not a login!"}, token=alice.token)
    assert bad.codes == ["BAD_USER_INPUT"] and "with" in bad.errors[0]["message"]
    self_typing = await api.call(SET_TYPING, {"w": alice.login}, token=alice.token)
    assert self_typing.codes == ["BAD_USER_INPUT"]
    assert (await api.call(SET_TYPING, {"w": bob.login})).codes == ["UNAUTHENTICATED"]
    results = [await api.call(SET_TYPING, {"w": bob.login}, token=alice.token) for _ in range(3)]
    assert [r.codes for r in results] == [[], [], ["RATE_LIMITED"]]
