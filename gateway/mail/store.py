"""Folders, emails, read state and unread counters in Cassandra.

Who owns which cells:

- ``emails``: written once (plain INSERT), never changed.
- ``email_placements``: where a user keeps an email and whether it is read,
  once that differs from the delivery default. Written ONLY by lightweight
  transactions that compare-and-set ``changed_at``, so concurrent marks and
  moves are serialised and each applied change knows it applied.
- ``emails_by_user_folder``: the folder listings, plain writes only. Every
  write carries ``USING TIMESTAMP`` = the ``changed_at`` of the placement it
  reflects (or the email's own time for the delivery), so writes that arrive
  late or are repeated can never undo a newer change.
- ``unread_email_stats``: counters, moved only after the placement change that
  justifies the delta applied. A delta lost to a failure is repaired by
  ``gateway mail-recount`` (``recount.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from uuid import UUID

from gateway.db.clock import now_micros
from gateway.db.lwt import compare_and_set
from gateway.db.session import Database, Params, Row, chunked
from gateway.db.timeline import (
    BucketedTimeline,
    Paged,
    Position,
    bucket_of_timeuuid,
    validate_granularity,
)
from gateway.mail.records import (
    INBOX,
    SYSTEM_COLORS,
    SYSTEM_FOLDERS,
    AttachmentRecord,
    EmailRecord,
    FolderEntry,
    FolderRecord,
    Placement,
)
from gateway.settings import Settings

#: Participants filed per logged batch. A folder row is at most ~1 KB (a 200
#: character subject), so a batch stays under Cassandra's 50 KiB batch limit.
FILING_BATCH = 25


class NotInFolder(Exception):
    """The email is not in the folder the caller named."""


def _attachment_tuple(a: AttachmentRecord) -> tuple[str, str, int, int, UUID]:
    return (a.filename, a.content_type, a.size, a.chunk_count, a.attachment_id)


def _email_from_row(row: Row) -> EmailRecord:
    return EmailRecord(
        id=row["id"],
        sender=row["sender"],
        recipients=list(row["recipients"] or ()),
        subject=row["subject"] or "",
        body=row["body"] or "",
        attachments=[
            AttachmentRecord(filename=f, content_type=t, size=s, chunk_count=c, attachment_id=i)
            for f, t, s, c, i in (row["attachments"] or ())
        ],
    )


_INSERT_ENTRY = (
    "INSERT INTO emails_by_user_folder (username, label, bucket, id, sender, subject, read, has_attachments)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
)
_DELETE_ENTRY = (
    "DELETE FROM emails_by_user_folder USING TIMESTAMP ?"
    " WHERE username = ? AND label = ? AND bucket = ? AND id = ?"
)
_FOLDER = BucketedTimeline(
    items="emails_by_user_folder",
    index="email_folder_buckets",
    key=("username", "label"),
    item_id="id",
    columns="id, sender, subject, read, has_attachments",
    newest_first=True,
)
_MOVE_COUNTER = "UPDATE unread_email_stats SET unread = unread + ? WHERE username = ? AND label = ?"


#: The most rows one user's folder partitions are read for: the service caps a user's own
#: folders at 100; a few more leave room for folders created by racing requests.
FOLDER_ROWS = 128


class MailStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.granularity = validate_granularity(settings.mail_bucket)

    def bucket(self, email_id: UUID) -> int:
        return bucket_of_timeuuid(email_id, self.granularity)

    # -- folders ------------------------------------------------------------

    async def folders(self, login: str) -> list[FolderRecord]:
        """inbox, sent, then the user's own folders by label."""
        rows = (
            await self.db.execute(
                "SELECT label, color FROM folders_by_user WHERE username = ? LIMIT ?",
                (login, FOLDER_ROWS),
                fetch_size=FOLDER_ROWS,
            )
        ).rows
        own = [FolderRecord(r["label"], r["color"]) for r in rows if r["label"] not in SYSTEM_FOLDERS]
        return [FolderRecord(label, SYSTEM_COLORS[label], system=True) for label in SYSTEM_FOLDERS] + own

    async def folder(self, login: str, label: str) -> FolderRecord | None:
        if label in SYSTEM_FOLDERS:
            return FolderRecord(label, SYSTEM_COLORS[label], system=True)
        row = (
            await self.db.execute(
                "SELECT label, color FROM folders_by_user WHERE username = ? AND label = ?", (login, label)
            )
        ).one()
        return FolderRecord(row["label"], row["color"]) if row else None

    async def count_folders(self, login: str) -> int:
        """The user's own folders, counted up to ``FOLDER_ROWS`` (past the cap either way)."""
        result = await self.db.execute(
            "SELECT label FROM folders_by_user WHERE username = ? LIMIT ?",
            (login, FOLDER_ROWS),
            fetch_size=FOLDER_ROWS,
        )
        return len(result.rows)

    async def create_folder(self, login: str, label: str, color: str, created_at: datetime) -> bool:
        """False when the user has that label already (``IF NOT EXISTS``: one of N racers wins)."""
        result = await self.db.execute(
            "INSERT INTO folders_by_user (username, label, color, created_at) VALUES (?, ?, ?, ?)"
            " IF NOT EXISTS",
            (login, label, color, created_at),
        )
        return result.applied

    async def unread_counts(self, login: str) -> dict[str, int]:
        rows = (
            await self.db.execute(
                "SELECT label, unread FROM unread_email_stats WHERE username = ? LIMIT ?",
                (login, FOLDER_ROWS + len(SYSTEM_FOLDERS)),
                fetch_size=FOLDER_ROWS + len(SYSTEM_FOLDERS),
            )
        ).rows
        return {r["label"]: int(r["unread"] or 0) for r in rows}

    # -- emails -------------------------------------------------------------

    async def email(self, email_id: UUID) -> EmailRecord | None:
        row = (
            await self.db.execute(
                "SELECT id, sender, recipients, subject, body, attachments FROM emails WHERE id = ?",
                (email_id,),
            )
        ).one()
        return _email_from_row(row) if row else None

    async def placement(self, login: str, email: EmailRecord) -> Placement:
        row = (
            await self.db.execute(
                "SELECT label, read, changed_at FROM email_placements WHERE username = ? AND email_id = ?",
                (login, email.id),
            )
        ).one()
        if row is None:
            return Placement.delivered(email, login)
        return Placement(row["label"], bool(row["read"]), row["changed_at"])

    async def store_email(self, email: EmailRecord) -> None:
        """Store the email once (unreachable until :meth:`deliver` files it)."""
        await self.db.execute(
            "INSERT INTO emails (id, sender, recipients, subject, body, attachments)"
            " VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?",
            (
                email.id,
                email.sender,
                email.recipients,
                email.subject,
                email.body,
                [_attachment_tuple(a) for a in email.attachments],
                email.filed_at,
            ),
        )

    async def deliver(
        self, email: EmailRecord, may_count: Callable[[], Awaitable[bool]] | None = None
    ) -> None:
        """File the email in every recipient's inbox and in the sender's sent folder.

        Recipients are filed in logged batches of ``FILING_BATCH`` (each
        all-or-nothing), the sender's sent folder last, so a sender who sees the
        email in sent knows every recipient has it. The inbox counters move by
        one counter batch at the end, if ``may_count`` (asked after the filing)
        allows it: under an idempotency key only one request of the key does.
        """
        recipients = [r for r in email.recipients if r != email.sender]
        await asyncio.gather(
            *(
                self._file(email, [(r, Placement.delivered(email, r)) for r in group])
                for group in chunked(recipients, FILING_BATCH)
            )
        )
        await self._file(email, [(email.sender, Placement.delivered(email, email.sender))])
        if may_count is None or await may_count():
            await self._move_counters([(r, INBOX, 1) for r in recipients])

    async def _file(self, email: EmailRecord, placements: Sequence[tuple[str, Placement]]) -> None:
        statements: list[tuple[str, Params]] = []
        for login, placement in placements:
            statements += self._entry_writes(login, email, placement)
        await self.db.batch(statements, logged=True)

    def _entry_writes(self, login: str, email: EmailRecord, placement: Placement) -> list[tuple[str, Params]]:
        bucket = self.bucket(email.id)
        stamp = placement.changed_at or email.filed_at
        return [
            (
                _INSERT_ENTRY,
                (
                    login,
                    placement.label,
                    bucket,
                    email.id,
                    email.sender,
                    email.subject,
                    placement.read,
                    bool(email.attachments),
                    stamp,
                ),
            ),
            _FOLDER.add_bucket((login, placement.label), bucket),
        ]

    async def _move_counters(self, deltas: Iterable[tuple[str, str, int]]) -> None:
        statements: list[tuple[str, Params]] = [
            (_MOVE_COUNTER, (delta, login, label)) for login, label, delta in deltas if delta
        ]
        if len(statements) == 1:
            await self.db.execute(*statements[0])
        elif statements:
            await self.db.batch(statements, logged=False)  # a counter batch: Cassandra forbids logging it

    # -- read state and moves ----------------------------------------------

    async def _write_placement_if_unchanged(
        self, login: str, email: EmailRecord, current: Placement, label: str, read: bool
    ) -> Placement | None:
        """Write the new placement if nobody changed it since ``current`` was read.

        The condition is on ``changed_at`` (or on the row's absence while the
        email is still where it was delivered), so of two concurrent changes
        exactly one applies; the loser re-reads and decides again. The new
        ``changed_at`` is strictly greater than the previous one (and than the
        delivery's write time), so folder-row writes stamped with it always
        supersede the ones of earlier changes.
        """
        previous = current.changed_at or email.filed_at
        changed = Placement(label, read, max(now_micros(), previous + 1))
        if current.changed_at is None:
            result = await self.db.execute(
                "INSERT INTO email_placements (username, email_id, label, read, changed_at)"
                " VALUES (?, ?, ?, ?, ?) IF NOT EXISTS",
                (login, email.id, label, read, changed.changed_at),
            )
        else:
            result = await self.db.execute(
                "UPDATE email_placements SET label = ?, read = ?, changed_at = ?"
                " WHERE username = ? AND email_id = ? IF changed_at = ?",
                (label, read, changed.changed_at, login, email.id, current.changed_at),
            )
        return changed if result.applied else None

    async def set_read(self, login: str, email: EmailRecord, read: bool) -> Placement:
        """Mark read or unread; the folder's counter moves only if this call flipped the flag."""

        async def attempt() -> Placement | None:
            current = await self.placement(login, email)
            if current.read == read:
                # Nothing to flip; rewrite the folder row as it should be, which
                # repairs it if the write after an earlier flip was lost.
                await self.refile(login, email, current)
                return current
            changed = await self._write_placement_if_unchanged(login, email, current, current.label, read)
            if changed is None:
                return None
            await self.refile(login, email, changed)
            await self._move_counters([(login, changed.label, -1 if read else 1)])
            return changed

        return await compare_and_set(self.db, attempt, what="mark email read")

    async def move(self, login: str, email: EmailRecord, source: str, target: str) -> Placement:
        """Move from ``source`` to ``target``; unread emails take their count along.

        Moving an email that is already in ``target`` succeeds without a change
        (a retried move is harmless). :class:`NotInFolder` when it is elsewhere.
        """

        async def attempt() -> Placement | None:
            current = await self.placement(login, email)
            if current.label == target:
                return current
            if current.label != source:
                raise NotInFolder(source)
            changed = await self._write_placement_if_unchanged(login, email, current, target, current.read)
            if changed is None:
                return None
            assert changed.changed_at is not None
            bucket = self.bucket(email.id)
            await self.db.batch(
                [
                    (_DELETE_ENTRY, (changed.changed_at, login, source, bucket, email.id)),
                    *self._entry_writes(login, email, changed),
                ],
                logged=True,  # the email leaves one listing and enters the other, both or neither
            )
            if not changed.read:
                await self._move_counters([(login, source, -1), (login, target, 1)])
            return changed

        return await compare_and_set(self.db, attempt, what="move email")

    # -- folder listings ----------------------------------------------------

    async def folder_page(
        self, login: str, label: str, *, size: int, cursor: Position | None, backward: bool = False
    ) -> Paged[FolderEntry]:
        """Newest first, across the folder's time buckets, either way."""
        return await _FOLDER.read(
            self.db, (login, label), _folder_entry, size=size, cursor=cursor, backward=backward
        )

    # -- repair (see ``recount.py``) ---------------------------------------

    async def all_entries(self, login: str, label: str) -> list[tuple[int, FolderEntry]]:
        """Every row of a folder listing with its bucket (all pages of every bucket)."""
        found: list[tuple[int, FolderEntry]] = []
        for bucket in await _FOLDER.buckets(self.db, (login, label)):
            entries = await _FOLDER.bucket_items(self.db, (login, label), bucket, _folder_entry)
            found += [(bucket, entry) for entry in entries]
        return found

    async def refile(self, login: str, email: EmailRecord, placement: Placement) -> None:
        """Write the folder row as ``placement`` says (stamped with its ``changed_at``)."""
        await self.db.batch(self._entry_writes(login, email, placement), logged=False)

    async def unlist(self, login: str, label: str, bucket: int, email_id: UUID, stamp: int) -> None:
        """Delete a folder row, stamped so that a newer filing of it is never undone."""
        await self.db.execute(_DELETE_ENTRY, (stamp, login, label, bucket, email_id))

    async def move_counter(self, login: str, label: str, delta: int) -> None:
        await self._move_counters([(login, label, delta)])


def _folder_entry(row: Row) -> FolderEntry:
    return FolderEntry(
        id=row["id"],
        sender=row["sender"],
        subject=row["subject"] or "",
        read=bool(row["read"]),
        has_attachments=bool(row["has_attachments"]),
    )
