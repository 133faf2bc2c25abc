"""``gateway mail-recount <login>``: repair a user's listings and unread counters after a failed write."""

from __future__ import annotations

import asyncio
import sys
from uuid import UUID

from gateway.db.session import Database
from gateway.errors import BadUserInput
from gateway.graph import validation
from gateway.mail.records import FolderEntry, Placement
from gateway.mail.store import MailStore
from gateway.settings import Settings
from gateway.users.store import UserStore

#: Placement reads in flight at once while recounting a mailbox.
RECOUNT_CONCURRENCY = 32


async def recount(db: Database, settings: Settings, login: str) -> int:
    """Print each folder's counter before and after; exit status 2 for an unknown user."""
    try:
        key = validation.login(login)
    except BadUserInput as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    if await UserStore(db, settings).get(key) is None:
        print(f"error: no user '{key}'", file=sys.stderr)
        return 2
    report = await rebuild_counters(MailStore(db, settings), key)
    for label, (before, after) in report.items():
        change = "" if before == after else f"  (was {before})"
        print(f"{key} {label}: {after} unread{change}")
    return 0


async def rebuild_counters(store: MailStore, login: str) -> dict[str, tuple[int, int]]:
    """Rebuild a user's unread counters from the folder partitions.

    First every folder row is checked against the user's placement of that
    email (the LWT-guarded truth) and rewritten where a write after a change
    was lost; then the unread rows of each folder are counted and each
    counter is moved by the difference. Returns ``{label: (before, after)}``.
    A send or mark landing while this runs can leave one counter off by
    that change; running it again settles it.
    """
    labels = [f.label for f in await store.folders(login)]
    entries: dict[str, list[tuple[int, FolderEntry]]] = {}
    for label in labels:
        entries[label] = await store.all_entries(login, label)
    limit = asyncio.Semaphore(RECOUNT_CONCURRENCY)

    async def reconcile(label: str, bucket: int, entry: FolderEntry) -> tuple[UUID, Placement] | None:
        async with limit:
            email = await store.email(entry.id)
            if email is None:
                return None
            placement = await store.placement(login, email)
            if placement.label != label and placement.changed_at is not None:
                await store.unlist(login, label, bucket, entry.id, placement.changed_at)
            if placement.label != label or placement.read != entry.read:
                await store.refile(login, email, placement)
            return entry.id, placement

    checked = await asyncio.gather(
        *(reconcile(label, bucket, entry) for label in labels for bucket, entry in entries[label])
    )
    truth = dict(c for c in checked if c is not None)
    unread: dict[str, int] = {}
    for placement in truth.values():
        if not placement.read:
            unread[placement.label] = unread.get(placement.label, 0) + 1
    before = await store.unread_counts(login)
    report: dict[str, tuple[int, int]] = {}
    for label in sorted(set(labels) | set(before)):
        target = unread.get(label, 0)
        current = before.get(label, 0)
        if target != current:
            await store.move_counter(login, label, target - current)
        report[label] = (current, target)
    return report
