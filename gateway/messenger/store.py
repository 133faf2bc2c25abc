"""Direct messages and talk partners in Cassandra.

A message is written by :meth:`MessengerStore.write_message`, one replay-safe
logged batch; the order of a send around it is in ``service.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from gateway.db import clock, timeline
from gateway.db.clock import micros_of, timeuuid_order
from gateway.db.session import Database, Row
from gateway.messenger.activity_store import ActivityIndex, Mark, Spot
from gateway.messenger.records import (
    LastMessage,
    MessageRecord,
    PartnerRecord,
    conversation_id,
)
from gateway.messenger.unread_store import UnreadLedger
from gateway.settings import Settings

_MESSAGE_COLUMNS = "message_id, sender, recipient, content, client_message_id"
_PARTNER_COLUMNS = "partner, last_message, unread, unread_since, partner_read_at"

_CONVERSATION = timeline.BucketedTimeline(
    items="direct_messages",
    index="direct_message_buckets",
    key=("conversation_id",),
    item_id="message_id",
    columns=_MESSAGE_COLUMNS,
    newest_first=True,
)

#: Activity rows read beyond a page, so that a few stale rows do not cut it short.
PAGE_SLACK = 4
#: Slices one page may read when stale rows left it short; past it the page is
#: returned short, with ``has_next``.
MAX_SLICES_PER_PAGE = 3
#: Talk partners whose rows one read fetches while finding the conversations a replay reads.
REPLAY_PARTNERS_PAGE = 100
#: Activity rows per slice, and slices, a replay reads at most before it gives up (too many).
REPLAY_SLICE = 1000
REPLAY_SLICES = 4
#: Conversations a replay reads at once.
REPLAY_CONCURRENCY = 16

_LAST_MESSAGE = (
    "SELECT last_message FROM talk_partners"
    " WHERE owner = ? AND row_kind = 0 AND partner = ? AND client_message_id = ''"
)


@dataclass(frozen=True)
class PartnerPage:
    """A page of talk partners in the main view's exact order (most recent first), each
    with its :class:`Mark`; ``more``: more lie past them in the direction read."""

    items: list[tuple[Mark, PartnerRecord]]
    more: bool


class MessengerStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.granularity = timeline.validate_granularity(settings.messenger_bucket)
        self.unread = UnreadLedger(db, lock_wait_seconds=2 * settings.request_timeout)
        self.activity = ActivityIndex(db, settings.messenger_activity_slot)

    def bucket_of(self, message_id: UUID) -> int:
        return timeline.bucket_of_timeuuid(message_id, self.granularity)

    # -- writing messages -------------------------------------------------

    async def write_message(self, message: MessageRecord) -> None:
        """Write the message, its bucket, both last-message cells and the pair's
        activity rows in one logged batch.

        Logged because the writes go to several partitions: once Cassandra
        accepts the batch, the batchlog sees every one of them applied, so a
        message is never left without the bucket-index entry that makes it
        reachable by paging, nor without the talk-partner and activity rows
        that list it.

        ``USING TIMESTAMP`` is the message's own time: for the last-message cell
        the newest message wins whichever batch lands last, and a replay of the
        same message rewrites identical cells.
        """
        conversation = message.conversation_id
        bucket = self.bucket_of(message.id)
        micros = micros_of(message.id)
        last = (message.id, message.sender, message.content)
        previous = await self._last_message_before(conversation, message)
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
                *self.activity.move(message.sender, message.recipient, message.id, previous),
            ],
            logged=True,
        )
        if previous is not None:
            self.activity.remember(conversation, previous)
        self.activity.remember(conversation, message.id)

    async def _last_message_before(self, conversation: str, message: MessageRecord) -> UUID | None:
        """The pair's last message as this process knows it, else as stored.

        Remembered ids may be behind another process's sends; the move then
        leaves a stale row behind, which readers skip and delete.
        """
        known, last_id = self.activity.known_last(conversation)
        if known:
            return last_id
        row = (await self.db.execute(_LAST_MESSAGE, (message.sender, message.recipient))).one()
        last = row["last_message"] if row else None
        return last[0] if last else None

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
        self, conversation: str, *, size: int, cursor: timeline.Position | None, backward: bool = False
    ) -> timeline.Paged[MessageRecord]:
        """Newest first, across buckets, either way (``BucketedTimeline.read``)."""
        return await _CONVERSATION.read(
            self.db, (conversation,), _message, size=size, cursor=cursor, backward=backward
        )

    async def messages_since(self, owner: str, after: UUID, limit: int) -> list[MessageRecord] | None:
        """Every message to or from ``owner``, in any conversation, stored after the message
        ``after`` (which need not be stored), oldest first; None when there are more than
        ``limit``. What ``messageReceived(after:)`` replays.

        The activity index names every pair with a message since ``after``'s slot (a slice
        upwards from it); their rows (one ``IN`` read per ``REPLAY_PARTNERS_PAGE``) tell
        which have a last message past ``after``, and each of those conversations is read
        from ``after`` on, concurrently: one read when its last message is in ``after``'s
        bucket, one more per bucket it crossed. So a phone that missed messages in k
        conversations costs 2 + k statements, and a send costs nothing more than it did.
        A row left at an older slot by a move counts too: unlike a page of the main view,
        a replay cannot skip a pair that moved while it read.
        """
        floor = timeuuid_order(after)
        candidates: dict[str, None] = {}
        slot = self.activity.slot_of(after)
        for _ in range(REPLAY_SLICES):
            spots = await self.activity.slice(owner, slot, REPLAY_SLICE, inclusive=True, upward=True)
            candidates.update(dict.fromkeys(spot.partner for spot in spots))
            if len(spots) < REPLAY_SLICE:
                break
            slot = spots[-1].slot  # the last slot may go on past the slice: read it again
        else:
            return None
        names = list(candidates)
        pages = [names[n : n + REPLAY_PARTNERS_PAGE] for n in range(0, len(names), REPLAY_PARTNERS_PAGE)]
        rows = await asyncio.gather(*(self.partners_among(owner, page) for page in pages))
        changed = [
            record
            for found in rows
            for record in found.values()
            if record.last_message is not None and timeuuid_order(record.last_message.id) > floor
        ]
        if len(changed) > limit:  # each holds a message after ``after``
            return None
        past = timeline.Position(self.bucket_of(after), after)
        gate = asyncio.Semaphore(REPLAY_CONCURRENCY)

        async def since(record: PartnerRecord) -> list[MessageRecord]:
            assert record.last_message is not None
            async with gate:
                page = await _CONVERSATION.towards_head(
                    self.db,
                    (conversation_id(owner, record.partner),),
                    _message,
                    past=past,
                    limit=limit + 1,
                    head_bucket=self.bucket_of(record.last_message.id),
                )
            return [message for _, message in page.items]

        found = [message for part in await asyncio.gather(*map(since, changed)) for message in part]
        if len(found) > limit:
            return None
        found.sort(key=lambda message: timeuuid_order(message.id))
        return found

    # -- talk partners ------------------------------------------------------

    async def partners_page(
        self, owner: str, *, size: int, cursor: Mark | None, backward: bool = False
    ) -> PartnerPage:
        """``owner``'s talk partners after ``cursor`` (towards the top when ``backward``), in
        the exact order of their last messages, whatever the slot size.

        The activity partition orders pairs by slot, and by partner within a slot: exact
        between slots, not within one. So a page reads one slice (``size + 1 +
        PAGE_SLACK`` rows, from the cursor's own slot on) and orders each slot it holds
        whole by the pairs' last messages, from one ``IN`` read of their rows. The slice's
        last slot may go on past it: the next slice, if the page needs one, starts with
        it; a slice that is all one such slot reads that slot whole instead. A row whose
        slot is not its pair's current slot is skipped and deleted in the background;
        when such rows leave a page short the next slice is read (at most
        ``MAX_SLICES_PER_PAGE``). So a page costs a slice and an ``IN`` read, one read
        more when one slot holds more than the page, whatever the number of partners
        (and the last page of a list may read one empty slice to learn it is the last).
        """
        found: list[tuple[Mark, PartnerRecord]] = []
        limit = size + 1 + PAGE_SLACK
        slot = cursor.slot if cursor is not None else None
        inclusive = True
        exhausted = False
        for _ in range(MAX_SLICES_PER_PAGE):
            spots = await self.activity.slice(owner, slot, limit, inclusive=inclusive, upward=backward)
            exhausted = len(spots) < limit
            cut = None if exhausted else spots[-1].slot
            whole = [spot for spot in spots if spot.slot != cut]
            if cut is not None and not whole:
                # The slice is one slot that goes on past it: read that slot whole.
                whole = await self.activity.slot_rows(owner, cut)
                slot, inclusive = cut, False
            elif cut is not None:
                slot, inclusive = cut, True  # the next slice starts with the slot cut here
            found += await self._ordered(owner, whole, cursor, backward)
            if len(found) > size or exhausted:
                break
        return PartnerPage(found[:size], len(found) > size or not exhausted)

    async def _ordered(
        self, owner: str, spots: list[Spot], cursor: Mark | None, backward: bool
    ) -> list[tuple[Mark, PartnerRecord]]:
        """The current rows among ``spots`` (whole slots), in view order (reversed when
        ``backward``), past ``cursor``; stale rows are deleted in the background."""
        if not spots:
            return []
        records = await self.partners_among(owner, [spot.partner for spot in spots])
        current: list[tuple[Mark, PartnerRecord]] = []
        stale: list[tuple[Spot, UUID]] = []
        for spot in spots:
            record = records[spot.partner]
            last = record.last_message
            if last is None:
                continue  # its send's batch is still landing
            if self.activity.slot_of(last.id) != spot.slot:
                stale.append((spot, last.id))
                continue
            mark = Mark(micros_of(last.id), spot.partner, spot.slot)
            if cursor is None or (mark > cursor if backward else mark < cursor):
                current.append((mark, record))
        self.activity.delete_stale(owner, stale)
        current.sort(key=lambda item: item[0], reverse=not backward)
        return current

    async def talk_partners(self, owner: str, others: Iterable[str]) -> set[str]:
        """Of ``others``, those ``owner`` has a conversation with (one read)."""
        rows = await self.partners_among(owner, others)
        return {login for login, record in rows.items() if record.last_message is not None}

    async def partner_read(self, owner: str, partner: str, at: datetime) -> None:
        """``partner`` marked their side of the conversation with ``owner`` read at ``at``:
        the receipt in ``owner``'s row (one plain write; the row exists, both sides of a
        conversation have one)."""
        await self.db.execute(
            "UPDATE talk_partners SET partner_read_at = ?"
            " WHERE owner = ? AND row_kind = 0 AND partner = ? AND client_message_id = ''",
            (at, owner, partner),
        )

    async def partner(self, owner: str, partner: str) -> PartnerRecord:
        """``owner``'s row for ``partner``; an empty one when they never talked."""
        return (await self.partners_among(owner, [partner]))[partner]

    async def partners_among(self, owner: str, partners: Iterable[str]) -> dict[str, PartnerRecord]:
        """Rows of the given partners, from one read of ``owner``'s partition."""
        wanted = sorted(set(partners))
        if not wanted:
            return {}
        result = await self.db.execute(
            f"SELECT {_PARTNER_COLUMNS} FROM talk_partners"
            " WHERE owner = ? AND row_kind = 0 AND partner IN ? LIMIT ?",
            # One row of kind 0 per partner.
            (owner, wanted, len(wanted)),
            fetch_size=len(wanted) + 1,
        )
        found = {row["partner"]: _partner(owner, row) for row in result.rows}
        if len(found) < len(wanted):  # a partner without a row: an empty one
            for name in wanted:
                if name not in found:
                    found[name] = PartnerRecord.empty(owner, name)
        return found


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
        partner_read_at=clock.utc(row["partner_read_at"]) if row["partner_read_at"] else None,
    )
