"""``gateway seed``: demo data of every domain, idempotent."""

from __future__ import annotations

import logging

from gateway.db.session import Database
from gateway.rooms.seed import seed_rooms
from gateway.settings import Settings
from gateway.users.seed import seed_users

log = logging.getLogger(__name__)


async def seed_demo(db: Database, settings: Settings) -> None:
    users = await seed_users(db, settings)
    log.info("demo users created: %s", ", ".join(users) or "none (already there)")
    rooms = await seed_rooms(db, settings)
    log.info("demo rooms created: %s", ", ".join(rooms) or "none (already there)")
