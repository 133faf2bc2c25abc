"""The talk-partner recency index: ``talk_partners_by_activity``, one slice per page.

Applifier's messenger read a user's whole talk-partner row and sorted it by the
last message; at 100 000 partners that is one unbounded read per view. Here
each pair also has one row in the owner's activity partition, clustered by the
*slot* of its last message (the message time rounded down to
``GATEWAY_MESSENGER_ACTIVITY_SLOT`` seconds), newest slot first. A page is one slice
from the top of that partition; the pairs' state (last message, unread) still
comes from ``talk_partners``, with one ``IN`` read.

Moving a pair to the top writes the row of the new slot and deletes the row of
the old one; a message in the slot the pair already occupies writes the same
row again, which costs no tombstone. So tombstones are bounded by one per pair
per slot, whatever the message rate.

The writer learns the old slot from what this process remembers of the pair's
last message, else from one single-row read. When two sends race (or another
process moved the pair), a row may outlive its slot: a row is *current* only
while its slot is the slot of the pair's last message. Readers skip the other
(stale) rows, and delete them off the response path; a stale row never hides a
pair, because the send that wrote the last message also wrote its slot's row,
and every delete of a slot's row is stamped with the time of a newer message.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from gateway.db.clock import micros_of
from gateway.db.session import Database, Params, chunked, current_metrics

#: How many pairs' last-message ids a process remembers to find the old slot
#: of a move without a read.
KNOWN_LAST_MESSAGES = 10_000

#: The most stale-row deletions a process keeps in flight; past it, cleanup is
#: skipped (the next reader finds the rows again).
MAX_CLEANUP_TASKS = 64
#: Deletes per cleanup batch (one partition, unlogged: well under the batch size warning).
CLEANUP_BATCH = 50

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = _EPOCH.replace(tzinfo=None)
_MILLISECOND = timedelta(milliseconds=1)

INSERT_ROW = "INSERT INTO talk_partners_by_activity (owner, slot, partner) VALUES (?, ?, ?) USING TIMESTAMP ?"
DELETE_ROW = (
    "DELETE FROM talk_partners_by_activity USING TIMESTAMP ? WHERE owner = ? AND slot = ? AND partner = ?"
)
_FROM_TOP = "SELECT slot, partner FROM talk_partners_by_activity WHERE owner = ? LIMIT ?"
_FROM_SLOT = "SELECT slot, partner FROM talk_partners_by_activity WHERE owner = ? AND slot <= ? LIMIT ?"
_PAST_SLOT = "SELECT slot, partner FROM talk_partners_by_activity WHERE owner = ? AND slot < ? LIMIT ?"
_FROM_BOTTOM = (
    "SELECT slot, partner FROM talk_partners_by_activity WHERE owner = ?"
    " ORDER BY slot ASC, partner ASC LIMIT ?"
)
_UP_FROM_SLOT = (
    "SELECT slot, partner FROM talk_partners_by_activity WHERE owner = ? AND slot >= ?"
    " ORDER BY slot ASC, partner ASC LIMIT ?"
)
_UP_PAST_SLOT = (
    "SELECT slot, partner FROM talk_partners_by_activity WHERE owner = ? AND slot > ?"
    " ORDER BY slot ASC, partner ASC LIMIT ?"
)
_ONE_SLOT = "SELECT slot, partner FROM talk_partners_by_activity WHERE owner = ? AND slot = ? LIMIT ?"
#: The most rows of one slot a page orders: the main view is exact for slots of up to this
#: many pairs (this many people writing to one user within one slot).
SLOT_ROWS = 5000


@dataclass(frozen=True)
class Spot:
    """A row's place in the activity partition: slot start (ms since the epoch) and partner."""

    slot: int
    partner: str


@dataclass(frozen=True, order=True)
class Mark:
    """A pair's exact place in the main view: its last message's time (µs) and the partner,
    which break ties; ``slot`` is the activity row it was read from. The view is in
    descending order of (``micros``, ``partner``)."""

    micros: int
    partner: str
    slot: int


def slot_time(slot: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=slot)


def slot_of_row(value: datetime) -> int:
    """A ``timestamp`` cell as ms since the epoch (the driver returns naive UTC)."""
    return (value - (_EPOCH if value.tzinfo else _NAIVE_EPOCH)) // _MILLISECOND


class ActivityIndex:
    """Slot arithmetic, the writes of a move, page slices and the cleanup of stale rows."""

    def __init__(self, db: Database, slot_seconds: int) -> None:
        if slot_seconds < 1:
            raise ValueError(f"GATEWAY_MESSENGER_ACTIVITY_SLOT must be at least 1 second, got {slot_seconds}")
        self.db = db
        self.slot_ms = slot_seconds * 1000
        #: conversation -> its last message id, None: known to have none.
        self._last: OrderedDict[str, UUID | None] = OrderedDict()
        self._cleanup: set[asyncio.Task[None]] = set()

    def slot_of(self, message_id: UUID) -> int:
        millis = micros_of(message_id) // 1000
        return millis - millis % self.slot_ms

    # -- what this process knows of each pair's last message ---------------

    def known_last(self, conversation: str) -> tuple[bool, UUID | None]:
        """(whether this process knows the pair's last message, its id or None for none)."""
        if conversation in self._last:
            return True, self._last[conversation]
        return False, None

    def remember(self, conversation: str, message_id: UUID | None) -> None:
        """Keep the newer of the remembered and the given last message (None: none yet)."""
        known = self._last.get(conversation)
        if conversation not in self._last or (
            message_id is not None and (known is None or micros_of(known) < micros_of(message_id))
        ):
            self._last[conversation] = message_id
        self._last.move_to_end(conversation)
        if len(self._last) > KNOWN_LAST_MESSAGES:
            self._last.popitem(last=False)

    def forget(self, conversation: str) -> None:
        self._last.pop(conversation, None)

    # -- writes -----------------------------------------------------------

    def move(self, a: str, b: str, message_id: UUID, previous: UUID | None) -> list[tuple[str, Params]]:
        """The writes that put the pair (a, b) at ``message_id``'s slot on both sides.

        Nothing when ``previous`` (the pair's last message before this one) is
        newer: that message's send placed the pair. The delete of the old slot's
        row is stamped with this message's time, so it can never remove a row a
        newer message wrote.
        """
        micros = micros_of(message_id)
        if previous is not None and micros_of(previous) > micros:
            return []
        slot = self.slot_of(message_id)
        writes: list[tuple[str, Params]] = [
            (INSERT_ROW, (a, slot_time(slot), b, micros)),
            (INSERT_ROW, (b, slot_time(slot), a, micros)),
        ]
        if previous is not None and self.slot_of(previous) != slot:
            old = slot_time(self.slot_of(previous))
            writes += [(DELETE_ROW, (micros, a, old, b)), (DELETE_ROW, (micros, b, old, a))]
        return writes

    # -- reads ------------------------------------------------------------

    async def slice(
        self, owner: str, slot: int | None, limit: int, *, inclusive: bool, upward: bool = False
    ) -> list[Spot]:
        """Up to ``limit`` rows of ``owner``'s partition from ``slot`` (that slot's rows too
        when ``inclusive``; None: from the top, or the bottom when ``upward``), newest slot
        first, or oldest first when ``upward``."""
        params: tuple[object, ...]
        if slot is None:
            cql, params = (_FROM_BOTTOM if upward else _FROM_TOP), (owner, limit)
        else:
            if upward:
                cql = _UP_FROM_SLOT if inclusive else _UP_PAST_SLOT
            else:
                cql = _FROM_SLOT if inclusive else _PAST_SLOT
            params = (owner, slot_time(slot), limit)
        result = await self.db.execute(cql, params, fetch_size=limit)
        return [Spot(slot_of_row(row["slot"]), row["partner"]) for row in result.rows]

    async def slot_rows(self, owner: str, slot: int) -> list[Spot]:
        """Every row of one slot of ``owner``'s partition."""
        result = await self.db.execute(_ONE_SLOT, (owner, slot_time(slot), SLOT_ROWS), fetch_size=SLOT_ROWS)
        return [Spot(slot_of_row(row["slot"]), row["partner"]) for row in result.rows]

    # -- cleanup of stale rows ----------------------------------------------

    def delete_stale(self, owner: str, stale: Sequence[tuple[Spot, UUID]]) -> None:
        """Delete rows that lost their slot, in the background, bounded.

        Each delete is stamped with the time of the pair's current last message:
        newer than anything written at the stale slot, older than any later move.
        """
        statements: list[tuple[str, Params]] = [
            (DELETE_ROW, (micros_of(last), owner, slot_time(spot.slot), spot.partner)) for spot, last in stale
        ]
        for chunk in chunked(statements, CLEANUP_BATCH):
            if len(self._cleanup) >= MAX_CLEANUP_TASKS:
                return
            self._spawn(functools.partial(self.db.batch, chunk, logged=False))

    def _spawn(self, call: Callable[[], Awaitable[object]]) -> None:
        async def run() -> None:
            current_metrics.set(None)  # not part of the request that found the rows
            with contextlib.suppress(Exception):
                await call()

        task = asyncio.get_running_loop().create_task(run())
        self._cleanup.add(task)
        task.add_done_callback(self._cleanup.discard)

    async def drain(self) -> None:
        """Wait for the cleanup in flight (tests, shutdown)."""
        while self._cleanup:
            await asyncio.gather(*self._cleanup, return_exceptions=True)
