"""WebSockets live as long as their session: a bad token at ``connection_init``, sign-out,
expiry and a session revoked on another gateway close them with 4403; sockets are capped
per user and per process (4429); both protocols time out without ``connection_init``."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from gateway.rooms.events import room_channel
from gateway.server.app import SERVICES, SOCKETS
from tests.support.client import Account, Api
from tests.support.rooms import create_room, post
from tests.support.ws_protocol import LEGACY_WS, PROTOCOLS, TRANSPORT_WS, WAIT, Socket

ME = "{ me { user { login } } }"
SUBSCRIBE = "subscription($r: String!) { roomMessages(room: $r) { content } }"
SIGN_OUT = "mutation { signOut }"
BIO = "mutation($b: String!) { updateProfile(input: { bio: $b }) { bio } }"

pytestmark = pytest.mark.parametrize("protocol", PROTOCOLS)


async def _until(predicate: Any) -> None:
    for _ in range(int(WAIT * 20)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the condition never held")


def _acked(message: dict[str, Any] | None) -> bool:
    return message is not None and message["type"] == "connection_ack"


async def test_a_bad_token_at_connection_init_is_closed_4403(api: Api, protocol: str) -> None:
    account = await api.sign_up("wsbad")
    await api.ok(SIGN_OUT, token=account.token)
    for payload in (
        {"authorization": "Bearer not-a-token"},
        {"authorization": f"Bearer {account.token}"},  # signed out
        {"authorization": "Basic abc"},
        {"Authorization": "Bearer"},
    ):
        async with Socket.open(api, protocol) as socket:
            answer = await socket.init(payload=payload)
            if protocol == LEGACY_WS:
                assert answer is not None and answer["type"] == "connection_error", answer
            else:
                assert answer is None
            assert await socket.close_code() == 4403, payload


def _errors(message: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The errors of an ``error`` message, or of a result message."""
    assert message is not None
    payload = message["payload"]
    if message["type"] == "error":
        return payload if isinstance(payload, list) else [payload]
    return payload.get("errors") or []


async def test_no_token_is_anonymous_and_a_good_one_acts_as_its_user(api: Api, protocol: str) -> None:
    account = await api.sign_up("wsgood")
    name = await create_room(api, account)
    async with Socket.open(api, protocol) as anonymous:
        assert _acked(await anonymous.init())
        await anonymous.start(SUBSCRIBE, {"r": name})
        assert [e["extensions"]["code"] for e in _errors(await anonymous.receive())] == ["UNAUTHENTICATED"]
    async with Socket.open(api, protocol) as signed_in:
        assert _acked(await signed_in.init(account.token))
        await signed_in.start(SUBSCRIBE, {"r": name})
        # Nothing to announce that the subscription is running: post until it delivers.
        for attempt in range(int(WAIT * 10)):
            await post(api, account, name, f"hello {attempt}")
            with contextlib.suppress(TimeoutError):
                message = await asyncio.wait_for(signed_in.receive(), 0.1)
                break
        assert message is not None
        assert message["payload"]["data"]["roomMessages"]["content"].startswith("hello")


async def test_sign_out_closes_that_sessions_sockets_with_4403(api: Api, app: Any, protocol: str) -> None:
    alice = await api.sign_up("wsout")
    again = await api.ok(
        "mutation($l: String!, $p: String!) { signIn(login: $l, password: $p) { token } }",
        {"l": alice.login, "p": alice.password},
    )
    other_session = again["signIn"]["token"]
    name = await create_room(api, alice)
    channel = room_channel(name)
    live = app[SERVICES].live
    async with Socket.open(api, protocol) as leaving, Socket.open(api, protocol) as staying:
        assert _acked(await leaving.init(alice.token))
        assert _acked(await staying.init(other_session))
        await leaving.start(SUBSCRIBE, {"r": name})
        await staying.start(SUBSCRIBE, {"r": name})
        await _until(lambda: live.followers(channel) == 2)

        assert (await api.ok(SIGN_OUT, token=alice.token))["signOut"] is True
        assert await asyncio.wait_for(leaving.close_code(), WAIT) == 4403
        await _until(lambda: live.followers(channel) == 1)  # its subscription ended

        await post(api, Account(alice.login, other_session, alice.password), name, "still here")
        message = await staying.receive()
        assert message is not None and message["payload"]["data"]["roomMessages"]["content"] == "still here"


async def test_an_operation_after_a_sign_out_the_socket_was_not_told_of_is_refused(
    api: Api, make_server: Any, protocol: str
) -> None:
    """A sign-out on a gateway that shares no broker with this one: the socket learns of
    it from its next operation, which never runs."""
    elsewhere, _ = await make_server()
    alice = await api.sign_up("wselse")
    name = await create_room(api, alice)
    async with Socket.open(api, protocol) as socket:
        assert _acked(await socket.init(alice.token))
        assert (await elsewhere.ok(SIGN_OUT, token=alice.token))["signOut"] is True
        if protocol == TRANSPORT_WS:
            assert await socket.result(BIO, {"b": "changed after sign-out"}) is None
        else:
            await socket.start(SUBSCRIBE, {"r": name})
        assert await socket.close_code() == 4403
    bio = await api.ok("query($l: String!) { user(login: $l) { bio } }", {"l": alice.login})
    assert bio["user"]["bio"] == ""


async def test_an_expired_session_closes_its_socket_with_4403(make_server: Any, protocol: str) -> None:
    short, short_app = await make_server(session_ttl_days=3 / 86400)
    alice = await short.sign_up("wsttl")
    name = await create_room(short, alice)
    live = short_app[SERVICES].live
    async with Socket.open(short, protocol) as socket:
        assert _acked(await socket.init(alice.token))
        await socket.start(SUBSCRIBE, {"r": name})
        await _until(lambda: live.followers(room_channel(name)) == 1)
        assert await asyncio.wait_for(socket.close_code(), WAIT) == 4403
    assert live.followers(room_channel(name)) == 0
    error = await short.error(ME, token=alice.token)
    assert error["extensions"]["code"] == "UNAUTHENTICATED"


async def test_sockets_are_capped_per_user_and_per_process(make_server: Any, protocol: str) -> None:
    capped, capped_app = await make_server(max_sockets=3, max_sockets_per_user=2)
    counts = capped_app[SOCKETS]
    alice = await capped.sign_up("wscap")
    async with Socket.open(capped, protocol) as first, Socket.open(capped, protocol) as second:
        assert _acked(await first.init(alice.token))
        assert _acked(await second.init(alice.token))
        async with Socket.open(capped, protocol) as third:
            answer = await third.init(alice.token)
            assert not _acked(answer)
            assert await third.close_code() == 4429
        await _until(lambda: counts.total == 2)
        assert counts.of(alice.login) == 2

        async with Socket.open(capped, protocol) as anonymous:
            assert _acked(await anonymous.init())
            assert counts.total == 3
            async with Socket.open(capped, protocol) as one_too_many:
                assert await one_too_many.close_code() == 4429  # refused before connection_init

            await first.ws.close()
            await _until(lambda: counts.total == 2 and counts.of(alice.login) == 1)
            async with Socket.open(capped, protocol) as replacement:
                assert _acked(await replacement.init(alice.token))
    await _until(lambda: counts.total == 0 and counts.of(alice.login) == 0)


async def test_no_connection_init_in_time_is_closed_4408(make_server: Any, protocol: str) -> None:
    impatient, _ = await make_server(ws_init_timeout_seconds=0.5)
    async with Socket.open(impatient, protocol) as socket:
        assert await asyncio.wait_for(socket.close_code(), WAIT) == 4408


SIGN_IN = "mutation($l: String!, $p: String!) { signIn(login: $l, password: $p) { token } }"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _me(socket: Socket) -> str | None:
    """The viewer's login, asked over ``socket`` (graphql-transport-ws runs queries)."""
    result = await socket.result(ME)
    assert result is not None, "the socket closed instead of answering"
    me = result["data"]["me"]
    return None if me is None else str(me["user"]["login"])


async def _acts_as(api: Api, socket: Socket, account: Account) -> None:
    """The socket acts as ``account``: asked directly where the protocol runs queries;
    over legacy graphql-ws (subscriptions only), by a participants-only room subscription
    that delivers."""
    if socket.protocol == TRANSPORT_WS:
        assert await _me(socket) == account.login
        return
    name = await create_room(api, account)
    await socket.start(SUBSCRIBE, {"r": name})
    for attempt in range(int(WAIT * 10)):
        await post(api, account, name, f"as {attempt}")
        with contextlib.suppress(TimeoutError):
            message = await asyncio.wait_for(socket.receive(), 0.1)
            assert message is not None and message["type"] == "data", message
            assert message["payload"]["data"]["roomMessages"]["content"].startswith("as ")
            return
    raise AssertionError("the subscription never delivered")


async def _sign_in_over(socket: Socket, account: Account) -> str:
    """Sign in with a mutation over the socket; the new session's token."""
    signed_in = await socket.result(SIGN_IN, {"l": account.login, "p": account.password})
    assert signed_in is not None and "errors" not in signed_in, signed_in
    return str(signed_in["data"]["signIn"]["token"])


async def test_a_socket_authorised_by_its_upgrade_header_closes_on_sign_out(api: Api, protocol: str) -> None:
    alice = await api.sign_up("wshdr")
    async with Socket.open(api, protocol, headers=_bearer(alice.token)) as socket:
        assert _acked(await socket.init())
        await _acts_as(api, socket, alice)
        assert (await api.ok(SIGN_OUT, token=alice.token))["signOut"] is True
        assert await asyncio.wait_for(socket.close_code(), WAIT) == 4403


async def test_a_bad_token_in_the_upgrade_header_is_closed_4403(api: Api, protocol: str) -> None:
    async with Socket.open(api, protocol, headers=_bearer("not-a-token")) as socket:
        answer = await socket.init()
        assert not _acked(answer)
        assert await socket.close_code() == 4403


async def test_a_socket_signed_in_by_a_mutation_closes_on_sign_out(api: Api, protocol: str) -> None:
    alice = await api.sign_up("wsmut")
    async with Socket.open(api, protocol) as socket:
        assert _acked(await socket.init())
        if protocol == LEGACY_WS:
            # Legacy graphql-ws runs subscriptions only: no mutation can sign the socket in.
            await socket.start(SIGN_IN, {"l": alice.login, "p": alice.password})
            refused = await socket.receive()
            assert refused is not None and refused["type"] == "error", refused
            return
        assert await _me(socket) is None
        token = await _sign_in_over(socket, alice)
        assert await _me(socket) == alice.login
        assert (await api.ok(SIGN_OUT, token=token))["signOut"] is True
        assert await asyncio.wait_for(socket.close_code(), WAIT) == 4403


async def test_sockets_authorised_by_header_or_mutation_expire_with_their_session(
    make_server: Any, protocol: str
) -> None:
    short, _ = await make_server(session_ttl_days=3 / 86400)
    alice = await short.sign_up("wshttl")
    async with (
        Socket.open(short, protocol, headers=_bearer(alice.token)) as by_header,
        Socket.open(short, TRANSPORT_WS) as by_mutation,
    ):
        assert _acked(await by_header.init())
        assert _acked(await by_mutation.init())
        await _sign_in_over(by_mutation, alice)
        assert await _me(by_mutation) == alice.login
        codes = await asyncio.wait_for(asyncio.gather(by_header.close_code(), by_mutation.close_code()), WAIT)
        assert list(codes) == [4403, 4403]


async def test_sockets_authorised_by_header_or_mutation_count_against_the_user_cap(
    make_server: Any, protocol: str
) -> None:
    capped, capped_app = await make_server(max_sockets_per_user=1)
    counts = capped_app[SOCKETS]
    alice = await capped.sign_up("wshcap")
    async with Socket.open(capped, protocol, headers=_bearer(alice.token)) as first:
        assert _acked(await first.init())
        assert counts.of(alice.login) == 1
        async with Socket.open(capped, protocol) as second:
            assert not _acked(await second.init(alice.token))
            assert await second.close_code() == 4429
        async with Socket.open(capped, TRANSPORT_WS) as third:
            assert _acked(await third.init())
            await third.start(SIGN_IN, {"l": alice.login, "p": alice.password})
            assert await asyncio.wait_for(third.close_code(), WAIT) == 4429
        await _acts_as(capped, first, alice)
    await _until(lambda: counts.total == 0 and counts.of(alice.login) == 0)
