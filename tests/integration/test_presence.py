"""Presence: online while a signed-in socket is open, last seen when the last one closed,
visible only to the user, their talk partners and their room mates, and never online for
a user who chose to appear offline. (Across processes and a killed process:
``tests/integration/test_presence_processes.py``.)"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from gateway.server.app import SERVICES
from gateway.users.presence import Presence, presence_channel
from tests.support.client import Account, Api
from tests.support.messenger import send
from tests.support.presence import CHANGED, PRESENCE, next_event, online, presence_of
from tests.support.rooms import JOIN, create_room
from tests.support.ws_protocol import WAIT, Socket

PARTNERS = "{ me { talkPartners(first: 50) { nodes { partner { login presence { online lastSeenAt } } } } } }"
HIDE = "mutation($v: Boolean!) { setPresenceVisible(visible: $v) }"


async def _until(predicate: Any) -> None:
    for _ in range(int(WAIT * 20)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the condition never held")


async def until_presence(api: Api, viewer: Account, login: str, is_online: bool) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def holds() -> bool:
        found = await presence_of(api, viewer, login)
        assert found is not None
        seen.update(found)
        return bool(found["online"]) is is_online

    await _until(holds)
    return seen


def presence_service(app: web.Application) -> Presence:
    return app[SERVICES].provided(Presence)


async def watching(app: web.Application, socket: Socket, logins: list[str]) -> None:
    """The subscription follows each login's channel."""
    hub = app[SERVICES].live
    assert hub is not None
    await _until(lambda: _async(all(hub.followers(presence_channel(login)) for login in logins)))


async def _async(value: bool) -> bool:
    return value


async def partners(api: Api) -> tuple[Account, Account]:
    alice = await api.sign_up("pres")
    bob = await api.sign_up("pres")
    await send(api, alice, bob.login, "hello")
    return alice, bob


async def test_a_talk_partner_sees_online_then_last_seen_when_the_last_socket_closes(api: Api) -> None:
    alice, bob = await partners(api)
    never = await presence_of(api, alice, bob.login)
    assert never == {"online": False, "lastSeenAt": None}

    async with online(api, bob), online(api, bob):
        assert await until_presence(api, alice, bob.login, True) == {"online": True, "lastSeenAt": None}
        closed_after = datetime.now(UTC)
        async with online(api, bob):
            pass  # a third socket closing leaves bob online
        assert await presence_of(api, alice, bob.login) == {"online": True, "lastSeenAt": None}
    seen = await until_presence(api, alice, bob.login, False)
    last_seen = datetime.fromisoformat(seen["lastSeenAt"])
    assert closed_after <= last_seen <= datetime.now(UTC)
    # Bob sees his own; the partner relation holds both ways.
    assert (await presence_of(api, bob, bob.login)) == seen
    async with online(api, alice):
        assert (await until_presence(api, bob, alice.login, True))["online"] is True


async def test_a_stranger_sees_null_and_a_room_mate_sees_presence(api: Api) -> None:
    owner = await api.sign_up("pres")
    mate = await api.sign_up("pres")
    stranger = await api.sign_up("pres")
    name = await create_room(api, owner)
    await api.ok(JOIN, {"n": name}, token=mate.token)
    async with online(api, owner):
        assert (await until_presence(api, mate, owner.login, True))["online"] is True
        assert await presence_of(api, stranger, owner.login) is None
        anonymous = await api.ok(PRESENCE, {"l": owner.login})
        assert anonymous["user"]["presence"] is None


async def test_subscribers_get_the_state_then_each_change_and_never_a_strangers(
    api: Api, app: web.Application
) -> None:
    alice, bob = await partners(api)
    stranger = await api.sign_up("pres")
    async with online(api, stranger), online(api, alice) as live:
        await live.start(CHANGED, {"l": [bob.login, stranger.login, bob.login]})
        first = await next_event(live)
        assert first == {"user": {"login": bob.login}, "presence": {"online": False, "lastSeenAt": None}}
        await watching(app, live, [bob.login])
        async with online(api, bob):
            came = await asyncio.wait_for(next_event(live), WAIT)
            assert came == {"user": {"login": bob.login}, "presence": {"online": True, "lastSeenAt": None}}
        went = await asyncio.wait_for(next_event(live), WAIT)
        assert went["user"] == {"login": bob.login} and went["presence"]["online"] is False
        assert went["presence"]["lastSeenAt"] is not None
        hub = app[SERVICES].live
        assert hub is not None and hub.followers(presence_channel(stranger.login)) == 0


async def test_appearing_offline_hides_every_socket_until_shown_again(api: Api, app: web.Application) -> None:
    alice, bob = await partners(api)
    async with online(api, alice) as live, online(api, bob) as bobs:
        await until_presence(api, alice, bob.login, True)
        await live.start(CHANGED, {"l": [bob.login]})
        assert (await next_event(live))["presence"]["online"] is True
        await watching(app, live, [bob.login])

        hidden = await bobs.result(HIDE, {"v": False})
        assert hidden is not None and hidden["data"] == {"setPresenceVisible": False}
        went = await asyncio.wait_for(next_event(live), WAIT)
        assert went["presence"]["online"] is False
        # Another socket while hidden: still offline, and nothing announced.
        async with online(api, bob):
            assert (await presence_of(api, alice, bob.login) or {})["online"] is False
        assert (await presence_of(api, bob, bob.login) or {})["online"] is False

        shown = await api.ok(HIDE, {"v": True}, token=bob.token)
        assert shown == {"setPresenceVisible": True}
        back = await asyncio.wait_for(next_event(live), WAIT)
        assert back["presence"] == {"online": True, "lastSeenAt": None}


async def test_a_hidden_user_connecting_later_is_never_online(api: Api) -> None:
    alice, bob = await partners(api)
    await api.ok(HIDE, {"v": False}, token=bob.token)
    async with online(api, bob):
        await asyncio.sleep(0.2)  # time for a wrong announcement to be made, if it were
        assert await presence_of(api, alice, bob.login) == {"online": False, "lastSeenAt": None}
    await api.ok(HIDE, {"v": True}, token=bob.token)
    async with online(api, bob):
        assert (await until_presence(api, alice, bob.login, True))["online"] is True


async def test_bad_arguments_are_refused_by_name(api: Api) -> None:
    alice = await api.sign_up("pres")
    async with online(api, alice) as live:
        too_many = await live.start(CHANGED, {"l": [f"user{n}" for n in range(101)]})
        assert (await _refusal(live, too_many))["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        bad = await _refusal(live, await live.start(CHANGED, {"l": ["not a login!"]}))
        assert bad["extensions"]["code"] == "BAD_USER_INPUT" and "logins" in bad["message"]
    anonymous = await api.call(HIDE, {"v": False})
    assert anonymous.codes == ["UNAUTHENTICATED"]


async def _refusal(live: Socket, operation: str) -> dict[str, Any]:
    """The one error an operation ended with."""
    while True:
        message = await live.receive()
        assert message is not None
        if message.get("id") == operation and message["type"] in {"next", "error"}:
            payload = message["payload"]
            errors: list[dict[str, Any]] = payload["errors"] if isinstance(payload, dict) else payload
            assert len(errors) == 1, errors
            return errors[0]


async def test_presence_of_a_page_of_partners_costs_the_same_statements_for_3_and_12(api: Api) -> None:
    async def viewer_with(count: int) -> tuple[Account, list[Account]]:
        viewer = await api.sign_up("pres")
        others = [await api.sign_up("pres") for _ in range(count)]
        for other in others:
            await send(api, other, viewer.login, "hi")
        return viewer, others

    few, few_partners = await viewer_with(3)
    many, many_partners = await viewer_with(12)
    async with contextlib.AsyncExitStack() as stack:
        for partner in (few_partners[0], many_partners[0], many_partners[5]):
            await stack.enter_async_context(online(api, partner))
        await until_presence(api, many, many_partners[5].login, True)
        small = await api.call(PARTNERS, token=few.token)
        large = await api.call(PARTNERS, token=many.token)
    assert small.statements == large.statements
    assert [p["partner"]["presence"]["online"] for p in large.result["me"]["talkPartners"]["nodes"]].count(
        True
    ) == 2
    plain = await api.call(PARTNERS.replace(" presence { online lastSeenAt }", ""), token=many.token)
    # Presence adds the partner check (one read) and the stored presence (one read).
    assert large.statements == plain.statements + 2
