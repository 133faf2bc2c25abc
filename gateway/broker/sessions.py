"""Sessions as long-lived connections see them: who, until when, and how their end is announced.

A WebSocket outlives the request that opened it, so it must learn when its
session ends. ``signOut`` publishes the session's key (the SHA-256 of its token,
never the token itself) on :data:`REVOCATIONS` through the process's
:class:`~gateway.broker.pubsub.PubSub`; one listener per process hears it for
all of the process's sockets (``gateway/http/session_watch.py``). With a
broker-backed PubSub the announcement reaches the sockets of every gateway
process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Protocol

from gateway.broker.pubsub import PubSub

#: The channel on which every revoked session's key is announced.
REVOCATIONS = "sessions:revoked"


class LiveSession(Protocol):
    @property
    def login(self) -> str: ...

    @property
    def expires_at(self) -> datetime: ...


#: The session of a bearer token while it lives; None when unknown, revoked or expired.
SessionLookup = Callable[[str], Awaitable[LiveSession | None]]


class RevocationListener(Protocol):
    """Told what the process's one listener on :data:`REVOCATIONS` hears: a process's cache of
    sessions (``gateway/users/session_cache.py``) may trust what it keeps only while the
    listener is on the channel, for only then does it hear every revocation."""

    def revoked(self, key: str) -> None:
        """The session named ``key`` (:func:`session_key`) was revoked."""

    def listening(self, on: bool) -> None:
        """The listener is on the channel (True), or is not and may miss revocations (False)."""


def session_key(token: str) -> str:
    """How a session is named where it is announced: its token's SHA-256."""
    return hashlib.sha256(token.encode()).hexdigest()


async def announce_revoked(pubsub: PubSub, token: str) -> None:
    await pubsub.publish(REVOCATIONS, session_key(token))
