"""Demo conversations between the demo users, for the playground."""

from __future__ import annotations

from gateway.db.session import Database
from gateway.messenger.service import MessengerService
from gateway.messenger.store import MessengerStore
from gateway.settings import Settings

#: (sender, recipient, content), oldest first.
DEMO_MESSAGES = [
    ("bob", "alice", "Hi Alice! Are you coming to the tea party?"),
    ("alice", "bob", "Of course. Is the Hatter bringing the cake?"),
    ("bob", "alice", "He says it is always six o'clock, so there is no time to bake."),
    ("carol", "alice", "Training run at dawn, want to join?"),
    ("dave", "alice", "Alice, could you open the pod bay doors?"),
    ("dave", "alice", "Never mind, I found the manual override."),
    ("erin", "bob", "I read your contract. Clause 7 is interesting."),
    ("bob", "erin", "Can we fix it?"),
]


async def seed_messenger(db: Database, settings: Settings) -> int:
    """Send the demo messages unless alice already has conversations; returns how many were sent.

    Alice then reads Bob's messages, so the main view shows read and unread partners.
    """
    store = MessengerStore(db, settings)
    if (await store.partner("alice", "bob")).last_message is not None:
        return 0
    service = MessengerService(store)
    for sender, recipient, content in DEMO_MESSAGES:
        await service.send(sender, recipient, content)
    await service.mark_read("alice", "bob")
    return len(DEMO_MESSAGES)
