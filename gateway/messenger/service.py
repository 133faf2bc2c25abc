"""Sending a direct message and reading a conversation: the steps across the
message store, the unread ledger, the activity index and live delivery.

Sending a message, in order:

1. a new timeuuid (``clock.new_timeuuid``);
2. the recipient's unread count goes up by one, in the same Paxos round as the
   ``clientMessageId`` claim if there is one (``unread_store.py``); a key claimed
   before yields the earlier message instead, and nothing is counted;
3. one logged batch writes the message, its bucket in the conversation's bucket
   index, the last-message cell of both talk-partner rows and, when the pair
   changes slot, its rows in both activity partitions (``activity_store.py``), every
   cell ``USING TIMESTAMP`` = the message's time. The old slot comes from the
   pair's last message as this process remembers it, else from one read
   (``MessengerStore.write_message``);
4. the message is published to both users' subscriptions, once: a retry that
   finds it stored publishes nothing.

Step 3 is a replay-safe write: the same message id gives the same partitions,
keys, values and timestamps, so writing it twice is writing it once. That is how
a failure between steps 2 and 3 heals: the client's retry with the same
``clientMessageId`` finds the claim, finds no message, and writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from gateway.broker.pubsub import PubSub
from gateway.db.clock import new_timeuuid, time_of
from gateway.db.timeline import REPLAY_MAX, Seam
from gateway.errors import BadUserInput
from gateway.messenger.events import (
    publish_message,
    receipt_event,
    receipts_channel,
    typing_channel,
    typing_event,
)
from gateway.messenger.records import MessageRecord, PartnerRecord, conversation_id
from gateway.messenger.store import MessengerStore
from gateway.users.records import UserProfile


@dataclass(frozen=True)
class Sent:
    message: MessageRecord
    #: True when this call stored the message (subscribers heard of it);
    #: False when a retried ``clientMessageId`` found it already stored.
    stored_now: bool


@dataclass(frozen=True)
class MessengerService:
    store: MessengerStore
    #: Where sends are announced; None: nobody listens (the demo seed, benchmarks).
    pubsub: PubSub | None = None

    async def send(
        self,
        sender: str,
        recipient: str,
        content: str,
        client_message_id: str | None = None,
        users: Sequence[UserProfile] = (),
    ) -> Sent:
        """Store a message, count it unread for the recipient and announce it (see the module
        doc); ``users``: the two users' public profiles, for the announcement to carry."""
        store = self.store
        message_id = new_timeuuid()
        counted = await store.unread.count_received(
            recipient, sender, message_id, time_of(message_id), client_message_id
        )
        if counted.previous is not None:
            store.activity.remember(conversation_id(sender, recipient), counted.previous.message_id)
        if not counted.counted_now:
            stored = await store.message(conversation_id(sender, recipient), counted.message_id)
            if stored is not None:
                return Sent(stored, stored_now=False)
        message = MessageRecord(counted.message_id, sender, recipient, content, client_message_id)
        await store.write_message(message)
        if self.pubsub is not None:
            await publish_message(self.pubsub, message, users)
        return Sent(message, stored_now=True)

    async def replay(self, viewer: str, after: UUID) -> tuple[list[MessageRecord], Seam]:
        """What ``messageReceived(after:)`` replays before it goes live (oldest first, at most
        ``REPLAY_MAX``; beyond that ``BAD_USER_INPUT`` on ``after``), and its seam."""
        messages = await self.store.messages_since(viewer, after, REPLAY_MAX)
        if messages is None:
            raise BadUserInput(
                "after",
                f"More than {REPLAY_MAX} messages since `after`: page the conversations with "
                "`last`/`before` (`me.talkPartners` shows which changed), then subscribe from the newest.",
            )
        return messages, Seam(after, [message.id for message in messages])

    async def mark_read(self, owner: str, partner: str) -> PartnerRecord:
        """Everything unread from ``partner`` becomes read (``unread_store.py``), and when
        there was something, ``partner`` gets the read receipt.

        The receipt is written before the count is zeroed: should the process stop
        between the two, the count still shows unread, and the next mark writes the
        receipt again; the other order could lose it for good (nothing unread, nothing
        to mark)."""
        record = await self.store.partner(owner, partner)
        at = datetime.now(UTC)
        receipt = record.unread > 0 and record.last_message is not None
        if receipt:
            await self.store.partner_read(partner, owner, at)
        marked = await self.store.unread.mark_read(record)
        if receipt and self.pubsub is not None:
            await self.pubsub.publish(receipts_channel(partner), receipt_event(owner, partner, at))
        return marked

    async def set_typing(self, sender: str, recipient: str, typing: bool) -> None:
        """Tell ``recipient`` that ``sender`` is typing to them (or stopped); nothing is
        stored, and nothing is said to someone ``sender`` never talked with."""
        if self.pubsub is None or not await self.store.talk_partners(sender, [recipient]):
            return
        event = typing_event(sender, recipient, typing, datetime.now(UTC))
        await self.pubsub.publish(typing_channel(recipient), event)
