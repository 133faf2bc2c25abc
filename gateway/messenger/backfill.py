"""Fill ``talk_partners_by_activity`` from ``talk_partners`` (``gateway backfill messenger``).

Keyspaces created before the activity index hold talk partners only in
``talk_partners``. This walks that table once, page by page (the only full-table
read of the messenger, and an operator's command, never a request), and writes
each pair's row at the slot of its last message, ``USING TIMESTAMP`` of that
message, with the owner's rows of a page in one single-partition batch and a
bounded number of batches in flight.

Idempotent: a second run writes the same cells with the same timestamps. A row
written from a last message that a newer send has replaced meanwhile is stale
and is skipped and deleted by readers like any other. Run it after every
gateway writes the index (after an upgrade, and after a change of
``GATEWAY_MESSENGER_ACTIVITY_SLOT``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.db.clock import micros_of
from gateway.db.concurrency import InFlightLimit
from gateway.db.session import Database, Params, Result
from gateway.messenger.activity_store import INSERT_ROW, ActivityIndex, slot_time
from gateway.settings import Settings

PAGE_SIZE = 500
MAX_IN_FLIGHT = 16

_SCAN = "SELECT owner, row_kind, partner, last_message FROM talk_partners"


@dataclass(frozen=True)
class BackfillReport:
    rows_read: int
    pairs_indexed: int


async def backfill(db: Database, settings: Settings) -> str:
    """The ``gateway backfill messenger`` command: the work and its one-line summary."""
    report = await backfill_messenger(db, settings)
    return f"{report.pairs_indexed} talk partners indexed from {report.rows_read} rows"


async def backfill_messenger(
    db: Database, settings: Settings, *, page_size: int = PAGE_SIZE, max_in_flight: int = MAX_IN_FLIGHT
) -> BackfillReport:
    index = ActivityIndex(db, settings.messenger_activity_slot)
    limit = InFlightLimit(max_in_flight)
    rows_read = indexed = 0
    async for page in db.pages(_SCAN, fetch_size=page_size):
        rows_read += len(page)
        by_owner: dict[str, list[tuple[str, Params]]] = defaultdict(list)
        for row in page:
            last = row["last_message"]
            if row["row_kind"] != 0 or last is None:
                continue
            owner, slot = row["owner"], slot_time(index.slot_of(last[0]))
            by_owner[owner].append((INSERT_ROW, (owner, slot, row["partner"], micros_of(last[0]))))
            indexed += 1
        await limit.run_all([_batch(db, writes) for writes in by_owner.values()])
    return BackfillReport(rows_read, indexed)


def _batch(db: Database, writes: list[tuple[str, Params]]) -> Callable[[], Awaitable[Result]]:
    return lambda: db.batch(writes, logged=False)
