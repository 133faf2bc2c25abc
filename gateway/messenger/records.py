"""The messenger's rows as records: messages, talk partners, and the conversation id."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.db.clock import time_of
from gateway.users.records import UserProfile


def conversation_id(a: str, b: str) -> str:
    """``smaller:bigger``: both participants name the same conversation.

    Logins never contain ``:``, so the id splits back unambiguously.
    """
    first, second = sorted((a, b))
    return f"{first}:{second}"


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
        return time_of(self.id)

    def to_event(self, users: Iterable[UserProfile] = ()) -> dict[str, Any]:
        """A JSON-ready form, so a broker-backed pub/sub can carry it unchanged; with
        ``users`` (the sender's and recipient's public profiles), so that its subscribers
        read nothing to show them (:func:`event_users`)."""
        event: dict[str, Any] = {
            "id": str(self.id),
            "sender": self.sender,
            "recipient": self.recipient,
            "content": self.content,
            "clientMessageId": self.client_message_id,
        }
        profiles = [user.to_json() for user in users]
        if profiles:
            event["users"] = profiles
        return event

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> MessageRecord:
        return cls(
            id=uuid.UUID(event["id"]),
            sender=event["sender"],
            recipient=event["recipient"],
            content=event["content"],
            client_message_id=event.get("clientMessageId"),
        )


def event_users(event: dict[str, Any]) -> list[UserProfile]:
    """The public profiles a message's event carries (none from a process that sent none)."""
    return [UserProfile.from_json(user) for user in event.get("users", ())]


@dataclass(frozen=True)
class LastMessage:
    id: uuid.UUID
    sender: str
    content: str

    @property
    def sent_at(self) -> datetime:
        return time_of(self.id)


@dataclass(frozen=True)
class PartnerRecord:
    """One talk partner of ``owner``: the last message, the unread state, the partner's receipt."""

    owner: str
    partner: str
    last_message: LastMessage | None
    unread: int
    unread_since: datetime | None
    #: When ``partner`` last marked the conversation read (their read receipt).
    partner_read_at: datetime | None = None

    @classmethod
    def empty(cls, owner: str, partner: str) -> PartnerRecord:
        return cls(owner, partner, None, 0, None)

    @property
    def conversation_id(self) -> str:
        return conversation_id(self.owner, self.partner)
