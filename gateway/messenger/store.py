"""Direct messages and talk partners in Cassandra.

Sending a message, in order:

1. a new timeuuid (``clock.new_timeuuid``);
2. the recipient's unread count goes up by one, in the same Paxos round as the
   ``clientMessageId`` claim if there is one (``unread.py``); a key claimed
   before yields the earlier message instead, and nothing is counted;
3. one logged batch writes the message, its bucket in the conversation's bucket
   index and the last-message cell of both talk-partner rows, every cell
   ``USING TIMESTAMP`` = the message's time.

Step 3 is a replay-safe write: the same message id gives the same partitions,
keys, values and timestamps, so writing it twice is writing it once. That is how
a failure between steps 2 and 3 heals: the client's retry with the same
``clientMessageId`` finds the claim, finds no message, and writes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from gateway.db import clock, timeline
from gateway.db.clock import micros_of, new_timeuuid, time_of
from gateway.db.session import Database, Row
from gateway.messenger.model import (
    LastMessage,
    MessageRecord,
    PartnerRecord,
    conversation_id,
)
from gateway.messenger.unread import UnreadLedger
from gateway.settings import Settings

_MESSAGE_COLUMNS = "message_id, sender, recipient, content, client_message_id"
_PARTNER_COLUMNS = "partner, last_message, unread, unread_since"

_CONVERSATION = timeline.BucketedTimeline(
    items="direct_messages",
    index="direct_message_buckets",
    key=("conversation_id",),
    item_id="message_id",
    columns=_MESSAGE_COLUMNS,
    newest_first=True,
)

#: Talk-partner rows read per page of the main view's partition slice.
PARTNER_FETCH_SIZE = 1000


@dataclass(frozen=True)
class Sent:
    message: MessageRecord
    #: True when this call stored the message (subscribers should hear of it);
    #: False when a retried ``clientMessageId`` found it already stored.
    stored_now: bool


class MessengerStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.granularity = timeline.validate_granularity(settings.messenger_bucket)
        self.unread = UnreadLedger(db, lock_wait_seconds=2 * settings.request_timeout)

    def bucket_of(self, message_id: UUID) -> int:
        return timeline.bucket_of_timeuuid(message_id, self.granularity)

    # -- sending ------------------------------------------------------------

    async def send(
        self, sender: str, recipient: str, content: str, client_message_id: str | None = None
    ) -> Sent:
        """Store a message and count it unread for the recipient (see the module doc)."""
        message_id = new_timeuuid()
        counted = await self.unread.count_received(
            recipient, sender, message_id, time_of(message_id), client_message_id
        )
        if not counted.counted_now:
            stored = await self.message(conversation_id(sender, recipient), counted.message_id)
            if stored is not None:
                return Sent(stored, stored_now=False)
        message = MessageRecord(counted.message_id, sender, recipient, content, client_message_id)
        await self.write_message(message)
        return Sent(message, stored_now=True)

    async def write_message(self, message: MessageRecord) -> None:
        """Write the message, its bucket and both last-message cells in one logged batch.

        Logged because the four writes go to four partitions: once Cassandra
        accepts the batch, the batchlog sees every one of them applied, so a
        message is never left without the bucket-index entry that makes it
        reachable by paging, nor without the talk-partner rows that list it.

        ``USING TIMESTAMP`` is the message's own time: for the last-message cell
        the newest message wins whichever batch lands last, and a replay of the
        same message rewrites identical cells.
        """
        conversation = message.conversation_id
        bucket = self.bucket_of(message.id)
        micros = micros_of(message.id)
        last = (message.id, message.sender, message.content)
        set_last = (
            "UPDATE talk_partners USING TIMESTAMP ? SET last_message = ?"
            " WHERE owner = ? AND row_kind = 0 AND partner = ? AND client_message_id = ''"
        )
        await self.db.batch(
            [
                (
                    "INSERT INTO direct_messages (conversation_id, bucket, message_id, sender, recipient,"
                    " content, client_message_id) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?",
                    (
                        conversation,
                        bucket,
                        message.id,
                        message.sender,
                        message.recipient,
                        message.content,
                        message.client_message_id,
                        micros,
                    ),
                ),
                _CONVERSATION.add_bucket((conversation,), bucket, timestamp=micros),
                (set_last, (micros, last, message.sender, message.recipient)),
                (set_last, (micros, last, message.recipient, message.sender)),
            ],
            logged=True,
        )

    # -- reading messages ---------------------------------------------------

    async def message(self, conversation: str, message_id: UUID) -> MessageRecord | None:
        row = (
            await self.db.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM direct_messages"
                " WHERE conversation_id = ? AND bucket = ? AND message_id = ?",
                (conversation, self.bucket_of(message_id), message_id),
            )
        ).one()
        return _message(row) if row else None

    async def messages_page(
        self, conversation: str, *, first: int, after: timeline.Position | None
    ) -> timeline.Page[MessageRecord]:
        """Newest first, across buckets (see :func:`gateway.db.timeline.read_page`)."""
        return await _CONVERSATION.page(self.db, (conversation,), _message, first=first, after=after)

    # -- talk partners ------------------------------------------------------

    async def partners(self, owner: str) -> list[PartnerRecord]:
        """Every talk partner of ``owner``, most recent conversation first.

        One slice of one partition (paged by the driver past 1000 partners);
        the order is by the last message's timeuuid, sorted here because a
        clustering order by time would need a delete and an insert per message,
        which race with each other.
        """
        rows = await self.db.execute_all(
            f"SELECT {_PARTNER_COLUMNS} FROM talk_partners WHERE owner = ? AND row_kind = 0",
            (owner,),
            fetch_size=PARTNER_FETCH_SIZE,
        )
        records = [_partner(owner, row) for row in rows]
        records.sort(key=lambda r: r.partner)
        records.sort(key=lambda r: micros_of(r.last_message.id) if r.last_message else -1, reverse=True)
        return records

    async def partner(self, owner: str, partner: str) -> PartnerRecord:
        """``owner``'s row for ``partner``; an empty one when they never talked."""
        return (await self.partners_among(owner, [partner]))[partner]

    async def partners_among(self, owner: str, partners: Iterable[str]) -> dict[str, PartnerRecord]:
        """Rows of the given partners, from one read of ``owner``'s partition."""
        wanted = sorted(set(partners))
        found = {name: PartnerRecord.empty(owner, name) for name in wanted}
        if not wanted:
            return found
        result = await self.db.execute(
            f"SELECT {_PARTNER_COLUMNS} FROM talk_partners WHERE owner = ? AND row_kind = 0 AND partner IN ?",
            (owner, wanted),
            fetch_size=len(wanted) + 1,
        )
        for row in result.rows:
            found[row["partner"]] = _partner(owner, row)
        return found

    async def mark_read(self, owner: str, partner: str) -> PartnerRecord:
        return await self.unread.mark_read(await self.partner(owner, partner))


def _message(row: Row) -> MessageRecord:
    return MessageRecord(
        id=row["message_id"],
        sender=row["sender"],
        recipient=row["recipient"],
        content=row["content"],
        client_message_id=row["client_message_id"],
    )


def _partner(owner: str, row: Row) -> PartnerRecord:
    last = row["last_message"]
    unread = row["unread"] or 0
    return PartnerRecord(
        owner=owner,
        partner=row["partner"],
        last_message=LastMessage(id=last[0], sender=last[1], content=last[2]) if last else None,
        unread=unread,
        unread_since=clock.utc(row["unread_since"]) if unread and row["unread_since"] else None,
    )
