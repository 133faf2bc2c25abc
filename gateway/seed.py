"""``gateway seed``: demo data of every domain, idempotent."""

from __future__ import annotations

import logging

from gateway.blog.seed import seed_blog
from gateway.broker.memory import InProcessPubSub
from gateway.contacts.seed import seed_contacts
from gateway.db.session import Database
from gateway.mail.seed import seed_mail
from gateway.messenger.seed import seed_messenger
from gateway.rooms.seed import seed_rooms
from gateway.settings import Settings
from gateway.users.seed import seed_users

log = logging.getLogger(__name__)


async def seed_demo(db: Database, settings: Settings) -> None:
    users = await seed_users(db, settings)
    log.info("demo users created: %s", ", ".join(users) or "none (already there)")
    posts = await seed_blog(db, settings)
    log.info("demo posts published: %s", ", ".join(posts) or "none (already there)")
    messages = await seed_messenger(db, settings)
    log.info("demo direct messages sent: %d", messages)
    log.info("demo identities linked: %s", ", ".join(await seed_contacts(db, settings)))
    log.info("demo emails sent: %d", await seed_mail(db, settings))
    rooms = await seed_rooms(db, settings, InProcessPubSub())  # nobody is subscribed yet
    log.info("demo rooms created: %s", ", ".join(rooms) or "none (already there)")
