"""Demo rooms for the playground, created once (a room that exists is left alone)."""

from __future__ import annotations

from gateway.broker.pubsub import PubSub
from gateway.db.session import Database
from gateway.errors import Conflict
from gateway.rooms.history_store import RoomHistory
from gateway.rooms.member_store import MemberStore
from gateway.rooms.service import RoomService
from gateway.rooms.store import RoomStore
from gateway.settings import Settings
from gateway.users.store import UserStore

DEMO_ROOMS: list[tuple[str, str, str, list[str], list[tuple[str, str]]]] = [
    (
        "general",
        "Anything goes. Be kind.",
        "alice",
        ["bob", "carol", "dave", "erin"],
        [
            ("alice", "Welcome, everyone!"),
            ("bob", "Hi Alice. Can we fix it?"),
            ("carol", "Hello from up here."),
        ],
    ),
    (
        "cassandra",
        "Partitions, tombstones and lightweight transactions.",
        "bob",
        ["alice", "erin"],
        [
            ("bob", "Bucket your time series, folks."),
            ("erin", "And read the fine print on LWTs."),
        ],
    ),
]


async def seed_rooms(db: Database, settings: Settings, pubsub: PubSub) -> list[str]:
    """Create the demo rooms that do not exist yet (with their first messages) and make
    sure the demo users are in them; returns the names created. Their events go to ``pubsub``."""
    service = RoomService(
        db,
        RoomStore(db, settings),
        MemberStore(db, settings),
        RoomHistory(db, settings),
        pubsub,
        UserStore(db, settings),
    )
    created = []
    for name, banner, creator, joiners, messages in DEMO_ROOMS:
        try:
            await service.create(creator, name, banner)
        except Conflict:
            is_new = False
        else:
            is_new = True
            created.append(name)
        for login in joiners:
            await service.join(login, name)
        if is_new:
            for author, content in messages:
                await service.post(author, name, content)
    return created
