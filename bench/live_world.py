"""What the delivery benchmark's cases share, and what one case is (``bench/bench_live.py``).

The world is written once per run, on the driver, in a keyspace of its own: users with a
session each and one room per size, joined by the first ``size`` users. A case names a
scenario, a size, a rate and a worker count; its plan says which members' sockets subscribe
with what, and who sends what to whom.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.harness import _free_port
from devnode.cassandra import CassandraNode
from devnode.redis import RedisServer
from gateway.broker.memory import InProcessPubSub
from gateway.db import clock
from gateway.db.migrations import drop_keyspace, migrate
from gateway.db.session import Database
from gateway.rooms.history_store import RoomHistory
from gateway.rooms.member_store import MemberStore
from gateway.rooms.service import RoomService
from gateway.rooms.store import RoomStore
from gateway.settings import Settings
from gateway.settings.tooling import ToolingSettings
from gateway.users.records import UserRecord
from gateway.users.store import SessionStore, UserStore

ROOM_SUBSCRIPTION = (
    "subscription($r: String!) { roomMessages(room: $r) { id content postedAt author { login } } }"
)
PAIR_SUBSCRIPTION = "subscription { messageReceived { id content sentAt sender { login } } }"
POST = "mutation($r: String!, $c: String!) { postRoomMessage(room: $r, content: $c) { id } }"
SEND = "mutation($to: String!, $c: String!) { sendMessage(to: $to, content: $c) { id } }"

#: How many users and sessions are written at once while preparing, and how many joins.
SETUP_CONCURRENCY = 100
JOIN_CONCURRENCY = 4


@dataclass(frozen=True)
class Member:
    login: str
    token: str


@dataclass
class World:
    """What every case of a run shares: the keyspace's users (with a session each), the rooms
    (``rooms[size]``: the first ``size`` users, created by the first one) and, for the
    cases with workers, the broker's URL."""

    settings: Settings
    db: Database
    members: list[Member]
    rooms: dict[int, str] = field(default_factory=dict)
    broker_url: str = ""
    #: The Cassandra node's and the broker's processes, when they are local: their CPU is shown.
    node_pid: int | None = None
    redis_pid: int | None = None


async def prepare(
    settings: Settings,
    db: Database,
    room_sizes: Sequence[int],
    pairs: int,
    broker_url: str = "",
    join_concurrency: int = JOIN_CONCURRENCY,
) -> World:
    """Users (written on the driver: signing up a thousand through argon2 would measure
    argon2), a session each, and one room per size."""
    users = UserStore(db, settings)
    sessions = SessionStore(db, settings)
    count = max([*room_sizes, 2 * pairs, 1])
    tag = uuid.uuid4().hex[:6]

    async def one(i: int) -> Member:
        login = f"live{tag}{i}"
        await users.create(
            UserRecord(login, "Live", f"User {i}", f"{login}@example.com", "", clock.now(), "")
        )
        return Member(login, (await sessions.create(login)).token)

    members: list[Member] = []
    for start in range(0, count, SETUP_CONCURRENCY):
        members.extend(
            await asyncio.gather(*(one(i) for i in range(start, min(count, start + SETUP_CONCURRENCY))))
        )
    world = World(settings, db, members, broker_url=broker_url)
    service = RoomService(
        db,
        RoomStore(db, settings),
        MemberStore(db, settings),
        RoomHistory(db, settings),
        InProcessPubSub(),
        UserStore(db, settings),
    )
    for size in sorted(set(room_sizes)):
        name = f"live-{tag}-{size}"
        await service.create(members[0].login, name, None)
        await _join_all(service, name, members[1:size], join_concurrency)
        world.rooms[size] = name
    return world


async def _join_all(service: RoomService, room: str, members: Sequence[Member], concurrency: int) -> None:
    """A few joins at a time: every join is an LWT on the room's one partition."""
    limit = asyncio.Semaphore(concurrency)

    async def join(member: Member) -> None:
        async with limit:
            await service.join(member.login, room)

    await asyncio.gather(*(join(m) for m in members))


@contextlib.asynccontextmanager
async def world_of(
    settings: Settings,
    room_sizes: Sequence[int],
    pairs: int,
    broker_url: str = "",
    join_concurrency: int = JOIN_CONCURRENCY,
) -> AsyncIterator[World]:
    """A fresh keyspace (``settings.keyspace``, dropped after) holding :func:`prepare`'s world;
    the embedded node started (or reused) first."""
    node: CassandraNode | None = None
    if settings.embedded:
        node = CassandraNode(ToolingSettings.from_env(), settings.cassandra_port)
        await asyncio.to_thread(node.start)
    db = Database(replace(settings, cassandra_io="thread"))
    try:
        await asyncio.to_thread(db.connect)
        await asyncio.to_thread(migrate, db, settings.keyspace)
        world = await prepare(settings, db, room_sizes, pairs, broker_url, join_concurrency)
        world.node_pid = node.status().pid if node is not None else None
        yield world
    finally:
        if db.connected:
            await asyncio.to_thread(drop_keyspace, db, settings.keyspace)
            await asyncio.to_thread(db.shutdown)


@contextlib.asynccontextmanager
async def own_redis() -> AsyncIterator[RedisServer]:
    """A Redis server of the benchmark's own, on a free port; stopped, and its files removed, after."""
    home = Path(tempfile.mkdtemp(prefix="bench-redis-"))
    redis = RedisServer(
        ToolingSettings(cassandra_home=home, redis_port=_free_port()), progress=lambda _: None
    )
    try:
        await asyncio.to_thread(redis.start)
        yield redis
    finally:
        await asyncio.to_thread(redis.stop)
        shutil.rmtree(home, ignore_errors=True)


@dataclass(frozen=True)
class Case:
    scenario: str  # "room" or "pairs"
    size: int  # sockets of the room, or pairs
    rate: float  # messages per second, all senders together
    workers: int

    @property
    def label(self) -> str:
        size = f"N={self.size}" if self.scenario == "room" else f"K={self.size}"
        return f"{self.scenario} {size} R={self.rate:g} w{self.workers}"

    @property
    def sockets(self) -> int:
        return self.size

    @property
    def fan_out(self) -> int:
        """Deliveries per message."""
        return self.size if self.scenario == "room" else 1

    @property
    def targets(self) -> int:
        """Senders it takes for one message to every socket: the poster, or every pair's sender."""
        return 1 if self.scenario == "room" else self.size


@dataclass
class Plan:
    """Who subscribes, with what, and who sends what to whom."""

    sockets: list[tuple[int, str]]  # (member index, token)
    subscription: dict[str, Any]
    #: (message number, content) -> (the sender's token, the mutation, its variables); message
    #: ``n`` goes to target ``n % case.targets``.
    send: Callable[[int, str], tuple[str, str, dict[str, Any]]]


def plan(world: World, case: Case) -> Plan:
    members = world.members
    if case.scenario == "room":
        room = world.rooms[case.size]
        poster = members[0].token
        return Plan(
            sockets=[(i, members[i].token) for i in range(case.size)],
            subscription={"query": ROOM_SUBSCRIPTION, "variables": {"r": room}},
            send=lambda _, content: (poster, POST, {"r": room, "c": content}),
        )
    pairs = case.size

    def send(number: int, content: str) -> tuple[str, str, dict[str, Any]]:
        pair = number % pairs
        return members[pairs + pair].token, SEND, {"to": members[pair].login, "c": content}

    return Plan(
        sockets=[(i, members[i].token) for i in range(pairs)],
        subscription={"query": PAIR_SUBSCRIPTION},
        send=send,
    )
