"""Live delivery of direct messages over the process's publish/subscribe.

Channels are named ``<scope>:<key>:<topic>``; the messenger publishes every
direct message on ``user:<login>:messages`` of both its sender and its
recipient, so every open connection of either user hears of it (their other
devices too) and nobody else's does. Rooms and contacts follow the same shape
(``room:<name>:messages``, ``user:<login>:contacts``).

Read receipts go to the user whose messages were read (``user:<login>:reads``),
typing to the user being typed to (``user:<login>:typing``): neither is stored
beyond the receipt's time in the reader's partner row.

Events travel as JSON-ready dicts (``MessageRecord.to_event``), so a
broker-backed :class:`~gateway.broker.pubsub.PubSub` can carry them unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import Any

from gateway.broker.pubsub import PubSub
from gateway.messenger.records import MessageRecord
from gateway.users.records import UserProfile


def user_messages_channel(login: str) -> str:
    return f"user:{login}:messages"


def receipts_channel(login: str) -> str:
    return f"user:{login}:reads"


def typing_channel(login: str) -> str:
    return f"user:{login}:typing"


def receipt_event(reader: str, owner: str, at: datetime) -> dict[str, Any]:
    """``reader`` read their side of the conversation with ``owner`` at ``at``."""
    return {"by": reader, "to": owner, "readAt": at.isoformat()}


def typing_event(sender: str, recipient: str, typing: bool, at: datetime) -> dict[str, Any]:
    return {"from": sender, "to": recipient, "typing": typing, "at": at.isoformat()}


async def publish_message(pubsub: PubSub, message: MessageRecord, users: Iterable[UserProfile] = ()) -> None:
    """To the channels of both users; ``users``: their public profiles, carried with it."""
    event = message.to_event(users)
    for login in sorted({message.sender, message.recipient}):
        await pubsub.publish(user_messages_channel(login), event)


@contextlib.asynccontextmanager
async def message_events(pubsub: PubSub, login: str) -> AsyncIterator[AsyncIterator[MessageRecord]]:
    """The messages to or from ``login`` published from now on.

    The subscription is registered on entry, before anything awaits, so a
    message published right after entry is never missed.
    """
    async with pubsub.subscribe(user_messages_channel(login)) as events:

        async def records() -> AsyncIterator[MessageRecord]:
            async for event in events:
                yield MessageRecord.from_event(event)

        yield records()
