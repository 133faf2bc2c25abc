"""What an idle subscribed socket costs the gateway's process, and that nothing of it is
kept once the socket closes.

Measured with tracemalloc, not RSS: the Python allocations the gateway makes for the
sockets, which do not depend on the allocator's arenas or on what else the machine does.
The sockets live in a process of their own (``tests/ws_sockets.py``), so the test process
(where the gateway runs) measures only the gateway's side. Left out: what the Cassandra
driver allocates (the node is shared with other test runs, whose schema changes the driver
follows whatever this test does) and log records (pytest keeps those it captures).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import sys
import tracemalloc
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from gateway.graph.live import Follow, LiveOperation
from gateway.http.live import SocketSink
from gateway.http.websocket import SessionSocket, TransportWSHandler
from gateway.rooms.events import room_channel
from gateway.server.app import SERVICES, SOCKETS
from tests.client import Account, Api
from tests.conftest import ServerFactory
from tests.test_rooms import JOIN, create_room
from tests.ws_protocol import WAIT

ROOM = "subscription($r: String!) { roomMessages(room: $r) { id content postedAt author { login } } }"
#: Sockets measured, and sockets opened first so that what is made once (prepared statements,
#: parsed documents, the channel's reader) is in place before the measuring starts.
SOCKETS_MEASURED = 100
WARM = 5
#: The goal: an idle subscribed socket under 32 KiB (it was 48 KiB with a task and a
#: suspended execution per subscription).
BOUND_BYTES = 32 * 1024
#: What a socket is made of on the gateway's side: none may outlive it.
PER_SOCKET = (SessionSocket, TransportWSHandler, Follow, LiveOperation, SocketSink, web.WebSocketResponse)

NOT_THE_SOCKETS = [
    tracemalloc.Filter(False, "*/cassandra/*"),
    tracemalloc.Filter(False, "*/gateway/db/*"),
    tracemalloc.Filter(False, "*/logging/*"),
    tracemalloc.Filter(False, "*/_pytest/*"),
]


async def _until(predicate: Any) -> None:
    for _ in range(int(WAIT * 20)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the condition never held")


@contextlib.asynccontextmanager
async def _sockets(api: Api, accounts: list[Account], room: str) -> AsyncIterator[None]:
    """Subscribed sockets of ``accounts`` in another process, open while the block runs."""
    client = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.ws_sockets",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert client.stdin is not None and client.stdout is not None
    config = {
        "url": api.url.replace("http://", "ws://", 1),
        "tokens": [account.token for account in accounts],
        "query": ROOM,
        "variables": {"r": room},
    }
    client.stdin.write(json.dumps(config).encode() + b"\n")
    await client.stdin.drain()
    try:
        line = await asyncio.wait_for(client.stdout.readline(), WAIT * 6)
        assert line.strip() == b"ready", line
        yield
    finally:
        client.stdin.write(b"\n")
        await client.stdin.drain()
        await asyncio.wait_for(client.wait(), WAIT)


def _traced(snapshot: tracemalloc.Snapshot) -> int:
    return sum(stat.size for stat in snapshot.filter_traces(NOT_THE_SOCKETS).statistics("filename"))


def _alive() -> Counter[str]:
    """The objects of :data:`PER_SOCKET` types alive, by type."""
    gc.collect()
    return Counter(type(o).__name__ for o in gc.get_objects() if isinstance(o, PER_SOCKET))


async def test_an_idle_subscribed_socket_holds_under_32_kib_and_nothing_outlives_it(
    make_server: ServerFactory,
) -> None:
    api, app = await make_server()
    hub = app[SERVICES].live
    counts = app[SOCKETS]
    assert hub is not None
    accounts = [await api.sign_up("mem") for _ in range(WARM + SOCKETS_MEASURED)]
    room = await create_room(api, accounts[0])
    for account in accounts[1:]:
        await api.ok(JOIN, {"n": room}, token=account.token)
    channel = room_channel(room)

    def settled(sockets: int) -> bool:
        """Every socket subscribed, its subscription parked, no operation task left."""
        return (
            counts.total == sockets
            and hub.followers(channel) == sockets
            and counts.parked == sockets
            and counts.operation_tasks == 0
        )

    async with _sockets(api, accounts[:WARM], room):
        await _until(lambda: settled(WARM))
        warm = _alive()
        gc.collect()
        tracemalloc.start()
        try:
            before = _traced(tracemalloc.take_snapshot())
            async with _sockets(api, accounts[WARM:], room):
                await _until(lambda: settled(WARM + SOCKETS_MEASURED))
                gc.collect()
                idle = _traced(tracemalloc.take_snapshot())
        finally:
            tracemalloc.stop()
        await _until(lambda: settled(WARM))
        left = _alive()
    await _until(lambda: counts.total == 0)
    per_socket = (idle - before) / SOCKETS_MEASURED
    print(f"\n{per_socket / 1024:.1f} KiB per idle subscribed socket")
    assert per_socket < BOUND_BYTES, f"{per_socket / 1024:.1f} KiB per idle subscribed socket"
    assert not left - warm, f"{left - warm} outlived their sockets"
