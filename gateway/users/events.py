"""Session revocations, announced to every gateway process.

A process that holds WebSocket connections subscribes once to
:data:`REVOKED_SESSIONS_CHANNEL` and closes the connections whose session was
revoked (sign-out or expiry on any process). The event names the session by
the SHA-256 of its token, as the ``sessions`` table does: the token itself never
travels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.graph.codec import EventType
from gateway.graph.pubsub import PubSub
from gateway.users.store import hash_token

#: One channel for the whole deployment: every process hears every revocation.
REVOKED_SESSIONS_CHANNEL = "sessions:revoked"


@dataclass(frozen=True)
class SessionRevoked:
    token_hash: bytes
    login: str

    @classmethod
    def of_token(cls, token: str, login: str) -> SessionRevoked:
        return cls(hash_token(token), login)


async def publish_revocation(pubsub: PubSub, token: str, login: str) -> None:
    await pubsub.publish(REVOKED_SESSIONS_CHANNEL, SessionRevoked.of_token(token, login))


def _to_json(event: SessionRevoked) -> dict[str, Any]:
    return {"tokenHash": event.token_hash.hex(), "login": event.login}


def _from_json(data: dict[str, Any]) -> SessionRevoked:
    return SessionRevoked(bytes.fromhex(data["tokenHash"]), data["login"])


SESSION_REVOKED = EventType("users.session-revoked", SessionRevoked, _to_json, _from_json)
