"""What the messenger stores, as plain data: messages, talk partners, ids."""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

#: 100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


def conversation_id(a: str, b: str) -> str:
    """``smaller:bigger``: both participants name the same conversation.

    Logins never contain ``:``, so the id splits back unambiguously.
    """
    first, second = sorted((a, b))
    return f"{first}:{second}"


def new_message_id(now_ns: int | None = None) -> uuid.UUID:
    """A version-1 timeuuid for a message sent now.

    The time field has 100 ns resolution; clock sequence and node are random
    (62 bits), so two messages created in the same instant, in this process or
    another, still get different ids and both survive.
    """
    ns = time.time_ns() if now_ns is None else now_ns
    timestamp = ns // 100 + _UUID_EPOCH_OFFSET
    clock_seq = secrets.randbits(14)
    node = secrets.randbits(48) | 0x010000000000  # multicast bit: not a MAC address
    return uuid.UUID(
        fields=(
            timestamp & 0xFFFFFFFF,
            (timestamp >> 32) & 0xFFFF,
            ((timestamp >> 48) & 0x0FFF) | 0x1000,
            ((clock_seq >> 8) & 0x3F) | 0x80,
            clock_seq & 0xFF,
            node,
        )
    )


def micros_of(message_id: uuid.UUID) -> int:
    """Microseconds since the Unix epoch encoded in a timeuuid (its write timestamp)."""
    return (message_id.time - _UUID_EPOCH_OFFSET) // 10


def sent_at_of(message_id: uuid.UUID) -> datetime:
    """The message's time at the millisecond precision the API shows."""
    millis = micros_of(message_id) // 1000
    return datetime.fromtimestamp(millis / 1000, UTC)


@dataclass(frozen=True)
class MessageRecord:
    id: uuid.UUID
    sender: str
    recipient: str
    content: str
    client_message_id: str | None = None

    @property
    def conversation_id(self) -> str:
        return conversation_id(self.sender, self.recipient)

    @property
    def sent_at(self) -> datetime:
        return sent_at_of(self.id)

    def to_event(self) -> dict[str, Any]:
        """A JSON-ready form, so a broker-backed pub/sub can carry it unchanged."""
        return {
            "id": str(self.id),
            "sender": self.sender,
            "recipient": self.recipient,
            "content": self.content,
            "clientMessageId": self.client_message_id,
        }

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> MessageRecord:
        return cls(
            id=uuid.UUID(event["id"]),
            sender=event["sender"],
            recipient=event["recipient"],
            content=event["content"],
            client_message_id=event.get("clientMessageId"),
        )


@dataclass(frozen=True)
class LastMessage:
    id: uuid.UUID
    sender: str
    content: str

    @property
    def sent_at(self) -> datetime:
        return sent_at_of(self.id)


@dataclass(frozen=True)
class PartnerRecord:
    """One talk partner of ``owner``: the last message and the unread state."""

    owner: str
    partner: str
    last_message: LastMessage | None
    unread: int
    unread_since: datetime | None

    @classmethod
    def empty(cls, owner: str, partner: str) -> PartnerRecord:
        return cls(owner, partner, None, 0, None)

    @property
    def conversation_id(self) -> str:
        return conversation_id(self.owner, self.partner)
