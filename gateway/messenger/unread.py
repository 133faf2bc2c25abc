"""Unread counts: written only by lightweight transactions, exact under concurrency.

The original messenger model read ``unread``, added one and wrote it back; a
mark-as-read landing in between was overwritten and an increment was lost.
Here every change of ``unread`` / ``unread_since`` is a compare-and-set:

    UPDATE ... SET unread = <seen + 1> ... IF unread = <seen>

Losers learn the current value from the failed LWT's result (Cassandra returns
the cells of the condition) and try again with it, within the bounded, jittered
loop of :func:`gateway.db.lwt.compare_and_set`; past the bound the caller gets
``UNAVAILABLE``. No plain write ever touches these two cells, so Paxos sees
every change of them. The last-message cell of the same row is written plainly
(see ``store.py``): mixing is safe because the cells are disjoint.

A send with a ``clientMessageId`` claims that key in the same conditional batch
as the increment (both rows live in the recipient's partition, so it is one
Paxos round): a send is counted if and only if its key was claimed, and a retry
finds the claim instead of counting again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from gateway.db.lwt import compare_and_set
from gateway.db.session import Database, Params, Row
from gateway.messenger.locks import PartitionLocks
from gateway.messenger.model import PartnerRecord

PARTNER_ROW = 0
CLAIM_ROW = 1

#: How long a ``clientMessageId`` is remembered: long enough for a phone that
#: was offline over a weekend to flush its outbox and still be deduplicated.
CLIENT_MESSAGE_ID_TTL = timedelta(days=3)

_PARTNER_KEY = "owner = ? AND row_kind = 0 AND partner = ? AND client_message_id = ''"

_READ_UNREAD = f"SELECT unread FROM talk_partners WHERE {_PARTNER_KEY}"
_FIRST_UNREAD = f"UPDATE talk_partners SET unread = 1, unread_since = ? WHERE {_PARTNER_KEY}"
_FIRST_UNREAD_FROM_NULL = f"{_FIRST_UNREAD} IF unread = null"
_FIRST_UNREAD_FROM_ZERO = f"{_FIRST_UNREAD} IF unread = ?"
_MORE_UNREAD = f"UPDATE talk_partners SET unread = ? WHERE {_PARTNER_KEY} IF unread = ?"
_ALL_READ = f"UPDATE talk_partners SET unread = 0, unread_since = null WHERE {_PARTNER_KEY} IF unread = ?"
_CLAIM = (
    "INSERT INTO talk_partners (owner, row_kind, partner, client_message_id, claimed_message_id)"
    " VALUES (?, 1, ?, ?, ?) IF NOT EXISTS USING TTL ?"
)


@dataclass(frozen=True)
class Counted:
    """The outcome of counting a received message."""

    message_id: UUID
    #: False when the ``clientMessageId`` was claimed before: ``message_id`` is
    #: the message that earlier send stored, and nothing was counted now.
    first: bool


class UnreadLedger:
    """The LWT side of ``talk_partners``: unread counters and send claims."""

    def __init__(self, db: Database, lock_wait_seconds: float) -> None:
        self.db = db
        self.locks = PartitionLocks(lock_wait_seconds)

    async def count_received(
        self,
        recipient: str,
        sender: str,
        message_id: UUID,
        sent_at: datetime,
        client_message_id: str | None,
    ) -> Counted:
        """Add one to ``recipient``'s unread count from ``sender`` (claiming the key, if any).

        ``unread_since`` is set when the count leaves 0 and kept while it grows.
        """
        async with self.locks.hold(recipient):
            row = (await self.db.execute(_READ_UNREAD, (recipient, sender))).one()
            seen: int | None = row["unread"] if row else None

            async def attempt() -> Counted | None:
                nonlocal seen
                increment = self._increment(recipient, sender, seen, sent_at)
                if client_message_id is None:
                    result = await self.db.execute(*increment)
                else:
                    ttl = int(CLIENT_MESSAGE_ID_TTL.total_seconds())
                    claim = (_CLAIM, (recipient, sender, client_message_id, message_id, ttl))
                    # A conditional batch on one partition: both conditions hold
                    # and both writes apply, or neither does.
                    result = await self.db.batch([claim, increment])
                if result.applied:
                    return Counted(message_id, first=True)
                for current in result.rows:
                    if current.get("row_kind") == CLAIM_ROW and current.get("claimed_message_id"):
                        return Counted(current["claimed_message_id"], first=False)
                seen = _unread_in(result.rows)
                return None

            return await compare_and_set(self.db, attempt, what="unread count")

    async def mark_read(self, record: PartnerRecord) -> PartnerRecord:
        """Zero the count that is there now; ``record`` is the row as just read.

        A message counted between that read and the write makes the condition
        fail; the retry zeroes the new value, so what the reader had seen and
        what arrived meanwhile is cleared exactly once, and a message counted
        after the write starts again from 0.
        """
        owner, partner = record.owner, record.partner
        async with self.locks.hold(owner):
            seen: int | None = record.unread

            async def attempt() -> bool | None:
                nonlocal seen
                if not seen:
                    return True
                result = await self.db.execute(_ALL_READ, (owner, partner, seen))
                if result.applied:
                    return True
                seen = _unread_in(result.rows)
                return None

            await compare_and_set(self.db, attempt, what="mark conversation read")
        return dataclasses.replace(record, unread=0, unread_since=None)

    @staticmethod
    def _increment(recipient: str, sender: str, seen: int | None, sent_at: datetime) -> tuple[str, Params]:
        if seen is None:
            return _FIRST_UNREAD_FROM_NULL, (sent_at, recipient, sender)
        if seen <= 0:
            return _FIRST_UNREAD_FROM_ZERO, (sent_at, recipient, sender, seen)
        return _MORE_UNREAD, (seen + 1, recipient, sender, seen)


def _unread_in(rows: list[Row]) -> int | None:
    """The current ``unread`` from a failed LWT's result rows."""
    for row in rows:
        if row.get("row_kind", PARTNER_ROW) == PARTNER_ROW and "unread" in row:
            value = row["unread"]
            return int(value) if value is not None else None
    return None
