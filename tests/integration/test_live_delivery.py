"""Live delivery at the cost of a socket write: one execution per event and selection,
no CQL per subscriber, answers per viewer where a field depends on who asks, and a
subscriber that stops reading cut off without holding up the others."""

from __future__ import annotations

import asyncio
import base64
import gc
import json
import os
import re
import socket
import struct
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from gateway.http.live import SocketSink
from gateway.rooms.events import room_channel
from gateway.server.app import SERVICES
from tests.conftest import ServerFactory
from tests.support.client import Account, Api
from tests.support.messenger import send
from tests.support.rooms import JOIN, create_room, post
from tests.support.ws_protocol import TRANSPORT_WS, WAIT, Socket

ROOM = "subscription($r: String!) { roomMessages(room: $r) { id content postedAt author { login } } }"
DIRECT = (
    "subscription { messageReceived { id content sentAt sender { login firstname } recipient { login } } }"
)
WITH_EMAIL = "subscription($r: String!) { roomMessages(room: $r) { content author { login email } } }"


async def _until(predicate: Any) -> None:
    for _ in range(int(WAIT * 20)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the condition never held")


async def _metric(api: Api, name: str) -> float:
    import aiohttp

    async with aiohttp.ClientSession() as http, http.get(api.base_url + "/metrics") as response:
        text = await response.text()
    match = re.search(rf"^{name}_total (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


async def _subscribed(api: Api, account: Account, query: str, name: str | None) -> Socket:
    socket_cm = Socket.open(api, TRANSPORT_WS)
    live = await socket_cm.__aenter__()
    live._exit = socket_cm  # type: ignore[attr-defined]
    answer = await live.init(account.token)
    assert answer is not None and answer["type"] == "connection_ack"
    await live.start(query, None if name is None else {"r": name})
    return live


async def _next(live: Socket) -> dict[str, Any]:
    message = await live.receive()
    assert message is not None and message["type"] == "next", message
    payload: dict[str, Any] = message["payload"]
    return payload


async def test_every_subscriber_receives_each_event_from_one_execution(
    api: Api, app: web.Application
) -> None:
    members = [await api.sign_up("fan") for _ in range(12)]
    name = await create_room(api, members[0])
    for member in members[1:]:
        await api.ok(JOIN, {"n": name}, token=member.token)
    hub = app[SERVICES].live
    assert hub is not None
    sockets = [await _subscribed(api, member, ROOM, name) for member in members]
    try:
        await _until(lambda: hub.followers(room_channel(name)) == len(members))
        deliveries = await _metric(api, "gateway_subscription_deliveries")
        statements = await _metric(api, "gateway_subscription_delivery_cql_statements")
        posted = [await post(api, members[1], name, f"hello {n}") for n in range(3)]
        for live in sockets:
            got = [(await _next(live))["data"]["roomMessages"] for _ in posted]
            assert [m["id"] for m in got] == [p["id"] for p in posted]
            assert {m["author"]["login"] for m in got} == {members[1].login}
        assert await _metric(api, "gateway_subscription_deliveries") - deliveries == 3 * len(members)
        # The event carries its author: the twelve sockets' deliveries read nothing at all.
        spent = await _metric(api, "gateway_subscription_delivery_cql_statements") - statements
        assert spent == 0
    finally:
        for live in sockets:
            await live._exit.__aexit__(None, None, None)  # type: ignore[attr-defined]


async def test_a_direct_message_reaches_both_users_sockets_without_a_read(
    api: Api, app: web.Application
) -> None:
    alice, bob = await api.sign_up("directa", firstname="Alicia"), await api.sign_up("directb")
    hub = app[SERVICES].live
    assert hub is not None
    sockets = [await _subscribed(api, account, DIRECT, None) for account in (alice, bob)]
    try:
        await _until(lambda: all(hub.followers(f"user:{a.login}:messages") == 1 for a in (alice, bob)))
        statements = await _metric(api, "gateway_subscription_delivery_cql_statements")
        sent = [await send(api, alice, bob.login, f"psst {n}") for n in range(3)]
        for live in sockets:
            got = [(await _next(live))["data"]["messageReceived"] for _ in sent]
            assert [m["id"] for m in got] == [m["id"] for m in sent]
            assert {
                (m["sender"]["login"], m["sender"]["firstname"], m["recipient"]["login"]) for m in got
            } == {(alice.login, "Alicia", bob.login)}
        # The event carries both users' public profiles: six deliveries, nothing read.
        assert await _metric(api, "gateway_subscription_delivery_cql_statements") - statements == 0
    finally:
        for live in sockets:
            await live._exit.__aexit__(None, None, None)  # type: ignore[attr-defined]


async def test_a_field_that_depends_on_the_viewer_is_answered_per_viewer(api: Api) -> None:
    alice, bob = await api.sign_up("viewa"), await api.sign_up("viewb")
    name = await create_room(api, alice)
    await api.ok(JOIN, {"n": name}, token=bob.token)
    alices = await _subscribed(api, alice, WITH_EMAIL, name)
    bobs = await _subscribed(api, bob, WITH_EMAIL, name)
    try:
        await asyncio.sleep(0)  # both registered before the post below is acknowledged
        for attempt in range(int(WAIT * 10)):
            await post(api, alice, name, f"mine {attempt}")
            try:
                seen_by_alice = await asyncio.wait_for(_next(alices), 0.2)
                break
            except TimeoutError:
                continue
        seen_by_bob = await _next(bobs)
        assert seen_by_alice["data"]["roomMessages"]["author"]["email"] == f"{alice.login}@example.com"
        assert seen_by_bob["data"]["roomMessages"]["author"]["email"] is None
    finally:
        for live in (alices, bobs):
            await live._exit.__aexit__(None, None, None)  # type: ignore[attr-defined]


class _SlowReader:
    """A subscriber that stops reading: a socket with a tiny receive buffer and a stream
    that pauses once 1 KiB waits, so what the gateway writes piles up on its side."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, api: Api, token: str, query: str, variables: dict[str, Any]) -> _SlowReader:
        url = urlsplit(api.url)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (url.hostname, url.port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=1024)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                f"GET {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                f"Sec-WebSocket-Protocol: {TRANSPORT_WS}\r\n\r\n"
            ).encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        slow = cls(reader, writer)
        slow.send({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}})
        await slow.frame()  # connection_ack
        slow.send({"id": "1", "type": "subscribe", "payload": {"query": query, "variables": variables}})
        return slow

    def send(self, message: dict[str, Any]) -> None:
        payload = json.dumps(message).encode()
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        length = len(payload)
        header = (
            bytes((0x81, 0x80 | length)) if length < 126 else struct.pack("!BBH", 0x81, 0x80 | 126, length)
        )
        self.writer.write(header + mask + masked)

    async def frame(self) -> tuple[int, bytes]:
        first, second = await self.reader.readexactly(2)
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self.reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
        return first & 0x0F, await self.reader.readexactly(length)


async def test_a_subscriber_that_stops_reading_is_cut_off_and_the_others_keep_receiving(
    make_server: ServerFactory,
) -> None:
    small, small_app = await make_server(ws_send_buffer_bytes=64 * 1024)
    alice, bob, carol = [await small.sign_up(p) for p in ("slowa", "slowb", "slowc")]
    name = await create_room(small, alice)
    for member in (bob, carol):
        await small.ok(JOIN, {"n": name}, token=member.token)
    hub = small_app[SERVICES].live
    assert hub is not None
    slow = await _SlowReader.open(small, bob.token, ROOM, {"r": name})
    fast = await _subscribed(small, carol, ROOM, name)
    received: list[str] = []

    async def keep_reading() -> None:
        while True:
            received.append((await _next(fast))["data"]["roomMessages"]["id"])

    reading = asyncio.create_task(keep_reading())
    try:
        await _until(lambda: hub.followers(room_channel(name)) == 2)
        big = "x" * 3990
        posted: list[str] = []
        # The slow socket's kernel buffers take a few megabytes before the gateway's own
        # buffer for it grows: posts go sixteen at a time until it is cut off. Each batch
        # waits for the reading subscriber, so the posts never outrun the process's delivery
        # (however slow the machine) and only the socket that stopped reading falls behind.
        while hub.followers(room_channel(name)) == 2:
            assert len(posted) < 5000, "the slow subscriber was never cut off"
            batch = await asyncio.gather(*(post(small, alice, name, big) for _ in range(16)))
            posted.extend(message["id"] for message in batch)
            await _until(lambda: len(received) >= len(posted))
        assert hub.followers(room_channel(name)) == 1  # the reader's subscription is the one left
        assert sorted(received) == sorted(posted)  # the reading subscriber missed nothing
        # What the slow socket finally reads, past what it left waiting, is the close frame.
        opcode, payload = 1, b""
        try:
            while opcode != 8:
                opcode, payload = await asyncio.wait_for(slow.frame(), WAIT)
            assert struct.unpack("!H", payload[:2])[0] == 1013
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # dropped after the grace period: what it held is freed all the same
    finally:
        reading.cancel()
        slow.writer.close()
        await fast._exit.__aexit__(None, None, None)  # type: ignore[attr-defined]


def _sink_of(peer: _SlowReader) -> SocketSink:
    """The gateway's sink writing to ``peer``'s socket (found by the peer's port)."""
    port = peer.writer.get_extra_info("sockname")[1]
    for sink in (o for o in gc.get_objects() if isinstance(o, SocketSink)):
        if sink._transport.get_extra_info("peername")[1] == port:
            return sink
    raise AssertionError("no sink writes to the slow socket")


async def test_what_the_process_holds_for_a_subscriber_that_never_reads_stays_within_its_bound(
    make_server: ServerFactory,
) -> None:
    """The backlog of a socket that never reads lives in its kernel buffers and in the
    gateway's write buffer for it; the gateway's part never passes the bound by more than
    the one frame that crossed it, and once the socket is cut off, the messages that follow
    (many times the bound) add nothing for it while the reader gets every one."""
    limit = 64 * 1024
    small, small_app = await make_server(ws_send_buffer_bytes=limit)
    alice, bob, carol = [await small.sign_up(p) for p in ("nevera", "neverb", "neverc")]
    name = await create_room(small, alice)
    for member in (bob, carol):
        await small.ok(JOIN, {"n": name}, token=member.token)
    hub = small_app[SERVICES].live
    assert hub is not None
    slow = await _SlowReader.open(small, bob.token, ROOM, {"r": name})
    fast = await _subscribed(small, carol, ROOM, name)
    received: list[str] = []

    async def keep_reading() -> None:
        while True:
            received.append((await _next(fast))["data"]["roomMessages"]["id"])

    reading = asyncio.create_task(keep_reading())
    try:
        await _until(lambda: hub.followers(room_channel(name)) == 2)
        sink = _sink_of(slow)
        big = "x" * 3990
        frame = len(big) + 1024  # the message's frame: its content and the rest of the event
        posted: list[str] = []
        held: list[int] = []
        while hub.followers(room_channel(name)) == 2:
            assert len(posted) < 5000, "the slow subscriber was never cut off"
            batch = await asyncio.gather(*(post(small, alice, name, big) for _ in range(16)))
            posted.extend(message["id"] for message in batch)
            await _until(lambda: len(received) >= len(posted))  # every delivery of the batch made
            held.append(sink._transport.get_write_buffer_size())
        assert max(held) <= limit + frame, held
        cut_at = len(posted)
        # Ten times the bound more: the reader gets each, the cut-off socket is given none.
        while len(posted) < cut_at + 10 * limit // len(big):
            batch = await asyncio.gather(*(post(small, alice, name, big) for _ in range(16)))
            posted.extend(message["id"] for message in batch)
            await _until(lambda: len(received) >= len(posted))
            assert sink._transport.get_write_buffer_size() <= max(held)
        assert sorted(received) == sorted(posted)
        assert hub.followers(room_channel(name)) == 1
    finally:
        reading.cancel()
        slow.writer.close()
        await fast._exit.__aexit__(None, None, None)  # type: ignore[attr-defined]
