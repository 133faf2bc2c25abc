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
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from gateway.db.keyed_locks import KeyedLocks
from gateway.db.lwt import compare_and_set
from gateway.db.session import Database, Params, Row
from gateway.messenger.records import PartnerRecord

PARTNER_ROW = 0
CLAIM_ROW = 1

#: How long a ``clientMessageId`` is remembered: long enough for a phone that
#: was offline over a weekend to flush its outbox and still be deduplicated.
CLIENT_MESSAGE_ID_TTL = timedelta(days=3)

#: How many (owner, partner) unread values a process remembers (see ``UnreadLedger._seen``).
KNOWN_UNREAD_ENTRIES = 10_000

_PARTNER_KEY = "owner = ? AND row_kind = 0 AND partner = ? AND client_message_id = ''"

_READ_UNREAD = f"SELECT unread, last_message FROM talk_partners WHERE {_PARTNER_KEY}"
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
    counted_now: bool
    #: The pair's last message before this send, when the ledger had to read the
    #: row anyway (its unread count was not known): the store then needs no read
    #: of its own to find the pair's old activity slot.
    previous: PreviousLast | None = None


@dataclass(frozen=True)
class PreviousLast:
    message_id: UUID | None


class UnreadLedger:
    """The LWT side of ``talk_partners``: unread counters and send claims."""

    def __init__(self, db: Database, lock_wait_seconds: float) -> None:
        self.db = db
        self.locks = KeyedLocks(lock_wait_seconds)
        self._known: OrderedDict[tuple[str, str], int | None] = OrderedDict()

    async def _seen(self, owner: str, partner: str) -> tuple[int | None, PreviousLast | None]:
        """The "read" half of the compare-and-set: the value this process last saw, else a read.

        Every write of this process to the partition runs under its lock, so the
        remembered value is exact unless another gateway process changed the
        count since; then the LWT condition fails and returns the current value,
        costing the round trip the read would have cost. Correctness never
        depends on it, only the statement count does.
        """
        key = (owner, partner)
        if key in self._known:
            return self._known[key], None
        row = (await self.db.execute(_READ_UNREAD, (owner, partner))).one()
        if row is None:
            return None, PreviousLast(None)
        last = row["last_message"]
        return row["unread"], PreviousLast(last[0] if last else None)

    def _remember(self, owner: str, partner: str, value: int | None) -> None:
        key = (owner, partner)
        self._known[key] = value
        self._known.move_to_end(key)
        if len(self._known) > KNOWN_UNREAD_ENTRIES:
            self._known.popitem(last=False)

    def _forget(self, owner: str, partner: str) -> None:
        self._known.pop((owner, partner), None)

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
            seen, previous = await self._seen(recipient, sender)

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
                    self._remember(recipient, sender, (seen or 0) + 1)
                    return Counted(message_id, counted_now=True, previous=previous)
                seen = _unread_in(result.rows)
                self._remember(recipient, sender, seen)
                for current in result.rows:
                    if current.get("row_kind") == CLAIM_ROW and current.get("claimed_message_id"):
                        return Counted(current["claimed_message_id"], counted_now=False)
                return None

            try:
                return await compare_and_set(self.db, attempt, what="unread count")
            except BaseException:
                # A timed-out LWT may or may not have applied: read afresh next time.
                self._forget(recipient, sender)
                raise

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
            wrote = False

            async def attempt() -> bool | None:
                nonlocal seen, wrote
                if not seen:
                    return True
                result = await self.db.execute(_ALL_READ, (owner, partner, seen))
                if result.applied:
                    wrote = True
                    return True
                seen = _unread_in(result.rows)
                return None

            try:
                await compare_and_set(self.db, attempt, what="mark conversation read")
            except BaseException:
                self._forget(owner, partner)
                raise
            if wrote:
                self._remember(owner, partner, 0)
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
