"""``roomMessages(room)`` over graphql-transport-ws: participants only, system messages
included, ended by the room's deletion after a last system message."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from gql import GraphQLRequest
from gql.transport.exceptions import TransportQueryError

from devnode.redis import RedisServer
from gateway.rooms.events import room_channel
from gateway.server.app import SERVICES
from tests.conftest import ServerFactory
from tests.support.client import Account, Api
from tests.support.redis_helpers import private_redis
from tests.support.rooms import DELETE, JOIN, LEAVE, create_room, post, room_name

__all__ = ["private_redis"]

SUBSCRIBE = """subscription($r: String!) {
  roomMessages(room: $r) { id content systemMessage author { login } room { name participantCount } }
}"""
WAIT = 30


async def _follow(api: Api, account: Account | None, name: str) -> list[dict[str, Any]]:
    """Every event of the subscription until the server completes it."""
    events = []
    async with api.websocket(account.token if account else None) as session:
        async for result in session.subscribe(GraphQLRequest(SUBSCRIBE, variable_values={"r": name})):
            events.append(result["roomMessages"])
    return events


def _subscribers(app: web.Application, name: str) -> int:
    """Subscriptions following the room in this process (the live hub holds one broker
    subscription per channel, whatever their number)."""
    live = app[SERVICES].live
    assert live is not None
    return live.followers(room_channel(name))


async def _subscribed(app: web.Application, name: str, count: int) -> None:
    for _ in range(WAIT * 20):
        if _subscribers(app, name) == count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"expected {count} subscribers of {name}")


async def _refused(api: Api, account: Account | None, name: str) -> dict[str, Any]:
    try:
        events = await asyncio.wait_for(_follow(api, account, name), WAIT)
    except TransportQueryError as exc:
        assert exc.errors
        return exc.errors[0]
    raise AssertionError(f"subscription was accepted: {events}")


def _summary(events: list[dict[str, Any]]) -> list[tuple[str, bool, str | None]]:
    return [(e["content"], e["systemMessage"], e["author"] and e["author"]["login"]) for e in events]


async def test_participants_get_messages_and_system_messages_until_the_room_is_deleted(
    api: Api, app: web.Application
) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    carol = await api.sign_up("carol")
    name = await create_room(api, alice)
    await api.ok(JOIN, {"n": name}, token=bob.token)

    followers = [asyncio.create_task(_follow(api, who, name)) for who in (alice, bob)]
    await _subscribed(app, name, 2)

    outsider = await _refused(api, carol, name)
    assert outsider["extensions"]["code"] == "FORBIDDEN"

    await api.ok(JOIN, {"n": name}, token=carol.token)
    posted = await post(api, bob, name, "hello room")
    await post(api, carol, name, "glad to be here")
    await api.ok(DELETE, {"n": name}, token=alice.token)

    done = await asyncio.wait_for(asyncio.gather(*followers), WAIT)
    expected = [
        (f"{carol.login} joins the room", True, None),
        ("hello room", False, bob.login),
        ("glad to be here", False, carol.login),
        (f"{alice.login} deleted the room", True, None),
    ]
    for events in done:
        assert _summary(events) == expected
        assert events[1]["id"] == posted["id"]
        assert events[0]["room"] == {"name": name, "participantCount": 3}
        assert events[-1]["room"]["name"] == name  # the room as it was, though it is gone
    assert _subscribers(app, name) == 0


async def test_leaving_ends_your_own_subscription_only(api: Api, app: web.Application) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    name = await create_room(api, alice)
    await api.ok(JOIN, {"n": name}, token=bob.token)
    alice_follows = asyncio.create_task(_follow(api, alice, name))
    bob_follows = asyncio.create_task(_follow(api, bob, name))
    await _subscribed(app, name, 2)

    await post(api, alice, name, "before")
    assert (await api.ok(LEAVE, {"n": name}, token=bob.token))["leaveRoom"] is True
    bob_events = await asyncio.wait_for(bob_follows, WAIT)
    assert _summary(bob_events) == [
        ("before", False, alice.login),
        (f"{bob.login} leaves the room", True, None),
    ]
    await _subscribed(app, name, 1)

    await post(api, alice, name, "after")  # bob no longer receives anything
    await api.ok(DELETE, {"n": name}, token=alice.token)
    alice_events = await asyncio.wait_for(alice_follows, WAIT)
    assert _summary(alice_events) == [
        ("before", False, alice.login),
        (f"{bob.login} leaves the room", True, None),
        ("after", False, alice.login),
        (f"{alice.login} deleted the room", True, None),
    ]


async def test_subscription_refusals(api: Api, app: web.Application) -> None:
    alice = await api.sign_up("alice")
    name = await create_room(api, alice)
    assert (await _refused(api, None, name))["extensions"]["code"] == "UNAUTHENTICATED"
    assert (await _refused(api, alice, room_name()))["extensions"]["code"] == "NOT_FOUND"
    invalid = await _refused(api, alice, "no")
    assert invalid["extensions"] == {"code": "BAD_USER_INPUT", "field": "room"}
    assert _subscribers(app, name) == 0


async def test_a_leave_on_another_gateway_ends_the_subscription_through_the_broker(
    make_server: ServerFactory, private_redis: RedisServer
) -> None:
    """Who receives a room's messages is known before they arrive: the leave, made on
    another process, reaches this one through the broker before the next message does
    (one broker connection delivers a channel's messages in order), and ends the
    subscription with no read of the participant row per delivery."""
    here, here_app = await make_server(broker_url=private_redis.url)
    elsewhere, _ = await make_server(broker_url=private_redis.url)
    alice = await here.sign_up("alice")
    bob = await here.sign_up("bob")
    name = await create_room(here, alice)
    await here.ok(JOIN, {"n": name}, token=bob.token)
    bob_follows = asyncio.create_task(_follow(here, bob, name))
    await _subscribed(here_app, name, 1)

    await post(here, alice, name, "before")
    assert (await elsewhere.ok(LEAVE, {"n": name}, token=bob.token))["leaveRoom"] is True
    await post(elsewhere, alice, name, "after")
    bob_events = await asyncio.wait_for(bob_follows, WAIT)
    assert _summary(bob_events) == [
        ("before", False, alice.login),
        (f"{bob.login} leaves the room", True, None),
    ]
    await _subscribed(here_app, name, 0)


async def test_a_deletion_on_a_gateway_without_a_shared_broker_ends_the_subscription(
    api: Api, app: web.Application, make_server: ServerFactory
) -> None:
    """The room is deleted elsewhere and a new room takes its name here: the old room's
    followers are not carried over into the new one."""
    elsewhere, _ = await make_server()
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    name = await create_room(api, alice)
    await api.ok(JOIN, {"n": name}, token=bob.token)
    bob_follows = asyncio.create_task(_follow(api, bob, name))
    await _subscribed(app, name, 1)

    assert (await elsewhere.ok(DELETE, {"n": name}, token=alice.token))["deleteRoom"] is True
    await create_room(api, bob, name)  # bob is in the new room, which is another room
    await post(api, bob, name, "new room")
    bob_events = await asyncio.wait_for(bob_follows, WAIT)
    assert bob_events == []
    await _subscribed(app, name, 0)


async def test_a_leave_no_broker_carried_ends_the_subscription_at_the_next_recheck(
    make_server: ServerFactory,
) -> None:
    """The leave is made on a gateway that shares no broker with this one, as if the broker
    had dropped its event: no event ever tells this gateway, and the periodic recheck of
    the room's membership ends the subscription all the same."""
    here, here_app = await make_server(live_recheck_seconds=0.2)
    elsewhere, _ = await make_server()
    alice = await here.sign_up("alice")
    bob = await here.sign_up("bob")
    carol = await here.sign_up("carol")
    name = await create_room(here, alice)
    for member in (bob, carol):
        await here.ok(JOIN, {"n": name}, token=member.token)
    bob_follows = asyncio.create_task(_follow(here, bob, name))
    carol_follows = asyncio.create_task(_follow(here, carol, name))
    await _subscribed(here_app, name, 2)

    assert (await elsewhere.ok(LEAVE, {"n": name}, token=bob.token))["leaveRoom"] is True
    assert await asyncio.wait_for(bob_follows, WAIT) == []
    await _subscribed(here_app, name, 1)
    await post(here, alice, name, "carol stays")
    await here.ok(DELETE, {"n": name}, token=alice.token)
    carol_events = await asyncio.wait_for(carol_follows, WAIT)
    assert _summary(carol_events)[0] == ("carol stays", False, alice.login)
