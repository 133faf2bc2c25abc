"""The gateway over two datacenters: a local ring of two nodes in ``dc1`` and one in ``dc2``
(``GossipingPropertyFileSnitch``), keyspace replication ``dc1:2,dc2:1``, the gateway's
statements sent to ``dc1`` (``CASSANDRA_LOCAL_DC``) at LOCAL_QUORUM / LOCAL_SERIAL.

With ``dc2`` stopped, a gateway pointed at ``dc1`` keeps serving reads, writes and
lightweight transactions (none of them waits for another datacenter); once ``dc2`` is back,
what was written meanwhile reaches it (hinted handoff from ``dc1``'s nodes), and a gateway
pointed at ``dc2`` reads it there at LOCAL_QUORUM, its driver sending nothing to ``dc1``.

Marked ``ring`` and left out of the default run (three more JVMs): ``scripts/ring-test two-dc``
starts the ring, runs this module and stops the ring. The module holds a lock on the ring from
start to end, and brings back the node it stopped.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

import pytest
from cassandra.policies import HostDistance

from devnode.cassandra import CassandraRing
from gateway.db.migrations import drop_keyspace
from gateway.db.session import Database
from gateway.server.app import SERVICES
from gateway.settings import Settings
from gateway.settings.tooling import ToolingSettings
from tests.conftest import start_server
from tests.support.client import Account, Api
from tests.support.ring_support import ring_settings
from tests.support.ring_traffic import Traffic, phase

pytestmark = pytest.mark.ring

LAYOUT = ("dc1", "dc1", "dc2")
REPLICATION = "dc1:2,dc2:1"
DC2_NODE = 3
# How long dc2 may take, once back, to hold what dc1 took while it was down (hints are sent
# once the failure detector sees it up again); the test stops waiting at the first full read.
CATCH_UP_SECONDS = 180.0


@pytest.fixture(scope="module")
async def two_dc() -> AsyncIterator[CassandraRing]:
    if os.environ.get("CASSANDRA_CONTACT_POINTS"):
        pytest.skip("CASSANDRA_CONTACT_POINTS names a cluster; the local ring is not used")
    ring = CassandraRing(ToolingSettings.from_env(), Settings.from_env().cassandra_port, datacenters=LAYOUT)
    ring.home.mkdir(parents=True, exist_ok=True)
    with (ring.home / ".test-lock").open("a") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            started = time.monotonic()
            await asyncio.to_thread(ring.start)
            await asyncio.to_thread(ring.settle_schema)
            print(f"two-dc test: ring start: {time.monotonic() - started:.1f}s", file=sys.stderr)
            yield ring
        finally:
            await asyncio.to_thread(ring.start)
            fcntl.flock(lock, fcntl.LOCK_UN)


def dc_settings(ring: CassandraRing, datacenter: str, keyspace: str | None = None) -> Settings:
    """A gateway whose statements go to ``datacenter``'s nodes, the keyspace in both."""
    settings = replace(
        ring_settings(ring, "test_two_dc"),
        contact_points=tuple(ring.hosts_in(datacenter)),
        replication=REPLICATION,
        local_dc=datacenter,
    )
    settings = replace(settings, keyspace=keyspace) if keyspace else settings
    return settings.validate()


def local_hosts(db: Database) -> list[str]:
    """The nodes the gateway's driver sends statements to (the rest it ignores)."""
    cluster = db.session.cluster
    policy = cluster.profile_manager.default.load_balancing_policy
    return sorted(h.address for h in cluster.metadata.all_hosts() if policy.distance(h) == HostDistance.LOCAL)


async def eventually(what: str, check: Callable[[], Awaitable[bool]], seconds: float) -> float:
    """Seconds until ``check()`` holds; fails naming ``what`` after ``seconds``."""
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < seconds, f"{what}: not within {seconds:.0f}s"
        await asyncio.sleep(1.0)
    return time.monotonic() - started


async def test_dc1_serves_with_dc2_stopped_and_dc2_receives_what_was_written(two_dc: CassandraRing) -> None:
    ring = two_dc
    settings = dc_settings(ring, "dc1")
    assert settings.consistency == "LOCAL_QUORUM" and settings.serial_consistency == "LOCAL_SERIAL"
    api, app, server = await start_server(settings)
    db = app[SERVICES].db
    assert local_hosts(db) == ring.hosts_in("dc1")
    assert db.datacenters() == {"dc1", "dc2"}
    traffic = Traffic(api)
    timings: dict[str, float] = {}
    try:
        with phase("all up", timings):
            alice = await traffic.sign_up("dcalice")
            bob = await traffic.sign_up("dcbob")
            room = await traffic.create_room(alice)
            await traffic.join(bob, room)
            await traffic.send(alice, bob, "up: hello bob")

        with phase("stop dc2", timings):
            await asyncio.to_thread(ring.stop, DC2_NODE)
        assert [s.running for s in ring.status()] == [True, True, False]

        with phase("dc2 down: reads, writes, lightweight transactions", timings):
            dave = await traffic.sign_up("dcdave")  # LWT: INSERT ... IF NOT EXISTS
            await traffic.send(alice, bob, "dc2-down: hello bob")  # writes + the unread count's LWT
            await traffic.send(dave, alice, "dc2-down: hello from dave")
            new_room = await traffic.create_room(dave)  # LWT
            await traffic.join(alice, new_room)  # LWT
            await traffic.post(dave, new_room, "dc2-down: posted")
            await traffic.post(bob, room, "dc2-down: bob in the old room")
            assert await traffic.conversation(bob, alice) == ["dc2-down: hello bob", "up: hello bob"]
            assert await traffic.conversation(alice, dave) == ["dc2-down: hello from dave"]
            assert "dc2-down: posted" in await traffic.history(alice, new_room)
            assert await traffic.rooms_of(dave) == [new_room]

        with phase("start dc2", timings):
            await asyncio.to_thread(ring.start_node, DC2_NODE)

        with phase("a gateway on dc2", timings):
            api2, app2, server2 = await start_server(dc_settings(ring, "dc2", settings.keyspace))
        try:
            assert local_hosts(app2[SERVICES].db) == ring.hosts_in("dc2")
            with phase("dc2 holds what dc1 took meanwhile", timings):
                waited = await eventually(
                    "the writes made with dc2 down, read in dc2 at LOCAL_QUORUM",
                    lambda: caught_up(Traffic(api2), alice, bob, dave, room, new_room),
                    CATCH_UP_SECONDS,
                )
            print(f"two-dc test: dc2 caught up {waited:.1f}s after its gateway was ready", file=sys.stderr)
            # And dc2 serves writes and lightweight transactions of its own.
            await Traffic(api2).send(bob, alice, "from dc2: hello alice")
            await Traffic(api2).join(bob, new_room)
        finally:
            await server2.close()
        with phase("dc1 reads what dc2 wrote", timings):
            await eventually(
                "dc2's writes, read in dc1",
                lambda: has(traffic.conversation(alice, bob), "from dc2: hello alice"),
                CATCH_UP_SECONDS,
            )
        print(
            "two-dc test timings: "
            + ", ".join(f"{name} {seconds:.1f}s" for name, seconds in timings.items()),
            file=sys.stderr,
        )
    finally:
        await asyncio.to_thread(drop_keyspace, db, settings.keyspace)
        await server.close()


async def has(read: Awaitable[list[str]], content: str) -> bool:
    return content in await read


async def caught_up(
    traffic: Traffic, alice: Account, bob: Account, dave: Account, room: str, new_room: str
) -> bool:
    """Everything written with dc2 down is there, read through the gateway on dc2: the sign-up
    (dave's session reads), the messages, both rooms' posts and the new room's membership."""
    api: Api = traffic.api
    response = await api.call("{ me { user { login } } }", token=dave.token)
    if response.errors or (response.data or {}).get("me") is None:
        return False  # dave's session, written with dc2 down, is not there yet
    assert response.result["me"]["user"]["login"] == dave.login
    try:
        return (
            "dc2-down: hello bob" in await traffic.conversation(bob, alice)
            and await traffic.conversation(alice, dave) == ["dc2-down: hello from dave"]
            and "dc2-down: posted" in await traffic.history(alice, new_room)
            and "dc2-down: bob in the old room" in await traffic.history(alice, room)
            and await traffic.rooms_of(dave) == [new_room]
        )
    except AssertionError:  # a read answered with an error: a row it needs is not there yet
        return False
