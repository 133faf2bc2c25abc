"""Sessions as long-lived connections see them: who, until when, and how their end is announced.

A WebSocket outlives the request that opened it, so it must learn when its
session ends. ``signOut`` publishes :data:`REVOKED` on the session's channel
through the process's :class:`~gateway.broker.pubsub.PubSub`; every socket of
that session listens there. With a broker-backed PubSub the announcement
reaches the sockets of every gateway process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Protocol

from gateway.broker.pubsub import PubSub

#: The message announcing that a session was revoked.
REVOKED = "revoked"


class LiveSession(Protocol):
    @property
    def login(self) -> str: ...

    @property
    def expires_at(self) -> datetime: ...


#: The session of a bearer token while it lives; None when unknown, revoked or expired.
SessionLookup = Callable[[str], Awaitable[LiveSession | None]]


def session_channel(token: str) -> str:
    """The channel of a session, named by its token's SHA-256 (never the token itself)."""
    return f"session:{hashlib.sha256(token.encode()).hexdigest()}"


async def announce_revoked(pubsub: PubSub, token: str) -> None:
    await pubsub.publish(session_channel(token), REVOKED)
