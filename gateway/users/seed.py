"""Demo users for the playground (password: ``demo-password``)."""

from __future__ import annotations

from gateway.db import clock
from gateway.db.session import Database
from gateway.settings import Settings
from gateway.users.passwords import hash_password
from gateway.users.records import UserRecord
from gateway.users.store import UserStore

DEMO_PASSWORD = "demo-password"

DEMO_USERS = [
    ("alice", "Alice", "Liddell", "alice@example.com", "Curiouser and curiouser."),
    ("bob", "Bob", "Builder", "bob@example.com", "Can we fix it?"),
    ("carol", "Carol", "Danvers", "carol@example.com", "Higher, further, faster."),
    ("dave", "Dave", "Bowman", "dave@example.com", "Open the pod bay doors."),
    ("erin", "Erin", "Brockovich", "erin@example.com", "Reads the fine print."),
]


async def seed_users(db: Database, settings: Settings) -> list[str]:
    """Create the demo users that do not exist yet; returns the logins created."""
    store = UserStore(db, settings)
    password_hash = await hash_password(settings, DEMO_PASSWORD)
    created = []
    for login, first, last, email, bio in DEMO_USERS:
        record = UserRecord(login, first, last, email, bio, clock.now(), password_hash)
        if await store.create(record):
            created.append(login)
    return created
