"""Identities, address books and the reverse index in Cassandra (see ``cql/006_contacts.cql``)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from gateway.contacts.records import BookEntry, LinkedIdentity
from gateway.db import clock
from gateway.db.concurrency import InFlightLimit
from gateway.db.session import IN_CHUNK, Database, Params, Row, chunked
from gateway.settings import Settings

#: Book rows per single-partition batch.
BOOK_BATCH = 100


@dataclass(frozen=True)
class Claim:
    """The owner of an identity after a claim; ``won`` when this claim created it."""

    login: str
    linked_at: datetime
    won: bool


_BOOK_COLUMNS = "network, identity_hash, network_id, name, owner, discovered_at"
_BOOK_SLICE = 5000
#: Rows read for a user's linked identities: the cap is 20, exact per process; links racing
#: from other processes may add one each.
_IDENTITY_ROWS = 64
_BOOK_FROM_START = f"SELECT {_BOOK_COLUMNS} FROM contact_books WHERE login = ? LIMIT ?"
_BOOK_AFTER = (
    f"SELECT {_BOOK_COLUMNS} FROM contact_books WHERE login = ? AND (network, identity_hash) > (?, ?) LIMIT ?"
)
_NETWORK_FROM_START = f"SELECT {_BOOK_COLUMNS} FROM contact_books WHERE login = ? AND network = ? LIMIT ?"
_NETWORK_AFTER = (
    f"SELECT {_BOOK_COLUMNS} FROM contact_books WHERE login = ? AND network = ? AND identity_hash > ? LIMIT ?"
)


def _book_slice(
    login: str, network: str | None, after: tuple[str, bytes] | None, limit: int
) -> tuple[str, tuple[object, ...]]:
    """The read of ``limit`` book rows past ``after``, within one network or across all."""
    if network is None:
        if after is None:
            return _BOOK_FROM_START, (login, limit)
        return _BOOK_AFTER, (login, *after, limit)
    if after is None:
        return _NETWORK_FROM_START, (login, network, limit)
    return _NETWORK_AFTER, (login, network, after[1], limit)


_INSERT_ENTRY = (
    "INSERT INTO contact_books (login, network, identity_hash, network_id, name) VALUES (?, ?, ?, ?, ?)"
)
_INSERT_DISCOVERED_ENTRY = (
    "INSERT INTO contact_books (login, network, identity_hash, network_id, name, owner, discovered_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_DELETE_ENTRY = "DELETE FROM contact_books WHERE login = ? AND network = ? AND identity_hash = ?"


class ContactStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.limit = InFlightLimit(settings.contacts_max_in_flight)
        #: How long an upload's lease lasts unless renewed (the upload renews it while it runs).
        self.lease_seconds = settings.contacts_upload_lease_seconds

    async def _each(self, calls: Sequence[Callable[[], Awaitable[object]]]) -> None:
        await self.limit.run_all(calls)

    # -- identities ---------------------------------------------------------

    async def claim(self, identity_hash: bytes, network: str, login: str, linked_at: datetime) -> Claim:
        """``IF NOT EXISTS``: of any number of concurrent claimants exactly one creates the
        row; everyone else gets the row that won (Cassandra returns it with ``[applied]``)."""
        result = await self.db.execute(
            "INSERT INTO identity_owners (identity_hash, network, login, linked_at) VALUES (?, ?, ?, ?)"
            " IF NOT EXISTS",
            (identity_hash, network, login, linked_at),
        )
        if result.applied:
            return Claim(login=login, linked_at=linked_at, won=True)
        row = result.one()
        assert row is not None
        return Claim(login=row["login"], linked_at=clock.utc(row["linked_at"]), won=False)

    async def add_user_identity(self, login: str, identity: LinkedIdentity) -> None:
        await self.db.execute(
            "INSERT INTO user_identities (login, network, network_id, identity_hash, linked_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (login, identity.network, identity.network_id, identity.identity_hash, identity.linked_at),
        )

    async def release(self, identity_hash: bytes, login: str) -> bool:
        """``DELETE ... IF login = ?``: frees the identity only if ``login`` holds it."""
        result = await self.db.execute(
            "DELETE FROM identity_owners WHERE identity_hash = ? IF login = ?", (identity_hash, login)
        )
        return result.applied

    async def remove_user_identity(self, login: str, network: str, network_id: str) -> None:
        await self.db.execute(
            "DELETE FROM user_identities WHERE login = ? AND network = ? AND network_id = ?",
            (login, network, network_id),
        )

    async def identities_of(self, login: str) -> list[LinkedIdentity]:
        rows = (
            await self.db.execute(
                "SELECT network, network_id, identity_hash, linked_at FROM user_identities"
                " WHERE login = ? LIMIT ?",
                (login, _IDENTITY_ROWS),
                fetch_size=_IDENTITY_ROWS,
            )
        ).rows
        return [
            LinkedIdentity(
                network=r["network"],
                network_id=r["network_id"],
                identity_hash=bytes(r["identity_hash"]),
                linked_at=clock.utc(r["linked_at"]),
            )
            for r in rows
        ]

    async def owners_of(self, hashes: Sequence[bytes]) -> dict[bytes, str]:
        """Owners of the given identities: one ``IN`` read per 100, run concurrently."""
        found: dict[bytes, str] = {}

        def lookup(chunk: Sequence[bytes]) -> Callable[[], Awaitable[None]]:
            async def read() -> None:
                result = await self.db.execute(
                    "SELECT identity_hash, login FROM identity_owners WHERE identity_hash IN ?",
                    (list(chunk),),
                    fetch_size=IN_CHUNK,
                )
                for row in result.rows:
                    found[bytes(row["identity_hash"])] = row["login"]

            return read

        await self._each([lookup(chunk) for chunk in chunked(hashes)])
        return found

    # -- the reverse index --------------------------------------------------

    async def uploaders_page(self, identity_hash: bytes, *, after: str | None, limit: int) -> list[str]:
        """Up to ``limit`` users with this identity in an address book, in login order,
        after ``after``: one slice of the identity's partition."""
        if after is None:
            result = await self.db.execute(
                "SELECT login FROM contact_index WHERE identity_hash = ? LIMIT ?",
                (identity_hash, limit),
                fetch_size=limit,
            )
        else:
            result = await self.db.execute(
                "SELECT login FROM contact_index WHERE identity_hash = ? AND login > ? LIMIT ?",
                (identity_hash, after, limit),
                fetch_size=limit,
            )
        return [r["login"] for r in result.rows]

    async def index(self, login: str, hashes: Iterable[bytes]) -> None:
        """One single-partition write per identity (each is its own partition), bounded in flight."""
        await self._each(
            [
                _call(self.db, "INSERT INTO contact_index (identity_hash, login) VALUES (?, ?)", (h, login))
                for h in hashes
            ]
        )

    async def unindex(self, login: str, hashes: Iterable[bytes]) -> None:
        await self._each(
            [
                _call(self.db, "DELETE FROM contact_index WHERE identity_hash = ? AND login = ?", (h, login))
                for h in hashes
            ]
        )

    # -- address books ------------------------------------------------------

    async def book(self, login: str, network: str) -> list[BookEntry]:
        """The whole stored book of one network (at most 5000 rows and a few leftovers),
        in keyed slices of ``_BOOK_SLICE`` rows."""
        rows: list[Row] = []
        position: tuple[str, bytes] | None = None
        while True:
            cql, params = _book_slice(login, network, position, _BOOK_SLICE)
            page = (await self.db.execute(cql, params, fetch_size=_BOOK_SLICE)).rows
            rows.extend(page)
            if len(page) < _BOOK_SLICE:
                return [BookEntry.from_row(r) for r in rows]
            position = (network, bytes(page[-1]["identity_hash"]))

    async def entry(self, login: str, network: str, identity_hash: bytes) -> BookEntry | None:
        row = (
            await self.db.execute(
                f"SELECT {_BOOK_COLUMNS} FROM contact_books"
                " WHERE login = ? AND network = ? AND identity_hash = ?",
                (login, network, identity_hash),
            )
        ).one()
        return BookEntry.from_row(row) if row else None

    async def entries_of(
        self, logins: Sequence[str], network: str, identity_hash: bytes
    ) -> dict[str, BookEntry]:
        """The book rows of one identity in many users' books: one ``IN`` read per 100
        users, bounded in flight."""
        found: dict[str, BookEntry] = {}

        def lookup(chunk: Sequence[str]) -> Callable[[], Awaitable[None]]:
            async def read() -> None:
                result = await self.db.execute(
                    f"SELECT login, {_BOOK_COLUMNS} FROM contact_books"
                    " WHERE login IN ? AND network = ? AND identity_hash = ?",
                    (list(chunk), network, identity_hash),
                    fetch_size=IN_CHUNK,
                )
                for row in result.rows:
                    found[row["login"]] = BookEntry.from_row(row)

            return read

        await self._each([lookup(chunk) for chunk in chunked(logins)])
        return found

    async def write_entries(self, login: str, entries: Sequence[BookEntry]) -> None:
        """Rows of one user's book, in single-partition unlogged batches.

        All rows of a batch share the partition, so Cassandra applies the batch as
        one mutation, atomically and in isolation; a logged batch would only add
        the batch log. An entry without an owner does not mention the owner
        columns, so it never erases a discovery recorded concurrently by
        ``linkIdentity``.
        """
        statements: list[tuple[str, Params]] = []
        for e in entries:
            if e.owner is None:
                statements.append((_INSERT_ENTRY, (login, e.network, e.identity_hash, e.network_id, e.name)))
            else:
                statements.append(
                    (
                        _INSERT_DISCOVERED_ENTRY,
                        (login, e.network, e.identity_hash, e.network_id, e.name, e.owner, e.discovered_at),
                    )
                )
        await self._batches(statements)

    async def remove_entries(self, login: str, network: str, hashes: Iterable[bytes]) -> None:
        await self._batches([(_DELETE_ENTRY, (login, network, h)) for h in hashes])

    async def _batches(self, statements: list[tuple[str, Params]]) -> None:
        def send(group: Sequence[tuple[str, Params]]) -> Callable[[], Awaitable[object]]:
            return lambda: self.db.batch(group, logged=False)

        await self._each([send(group) for group in chunked(statements, BOOK_BATCH)])

    async def record_discovery(
        self, login: str, network: str, identity_hash: bytes, owner: str, discovered_at: datetime
    ) -> None:
        await self.db.execute(
            "UPDATE contact_books SET owner = ?, discovered_at = ?"
            " WHERE login = ? AND network = ? AND identity_hash = ?",
            (owner, discovered_at, login, network, identity_hash),
        )

    async def forget_discovery(self, login: str, network: str, identity_hash: bytes, timestamp: int) -> None:
        """Clear a book row's owner, written at ``timestamp`` (µs): any later discovery wins."""
        await self.db.execute(
            "UPDATE contact_books USING TIMESTAMP ? SET owner = null, discovered_at = null"
            " WHERE login = ? AND network = ? AND identity_hash = ?",
            (timestamp, login, network, identity_hash),
        )

    async def page(
        self,
        login: str,
        *,
        network: str | None,
        after: tuple[str, bytes] | None,
        limit: int,
    ) -> tuple[list[BookEntry], bool]:
        """``limit`` entries in (network, identity hash) order after ``after``, skipping
        leftover rows; and whether more follow. Usually one read: another keyed slice
        follows only when leftovers made the first one short."""
        wanted = limit + 1
        entries: list[BookEntry] = []
        position = after
        while True:
            cql, params = _book_slice(login, network, position, wanted)
            rows = (await self.db.execute(cql, params, fetch_size=wanted)).rows
            entries.extend(e for e in map(BookEntry.from_row, rows) if not e.leftover)
            if len(entries) >= wanted or len(rows) < wanted:
                break
            position = (rows[-1]["network"], bytes(rows[-1]["identity_hash"]))
        return entries[:limit], len(entries) > limit

    # -- upload leases ------------------------------------------------------

    async def acquire_upload_lease(self, login: str, network: str) -> uuid.UUID | None:
        """``IF NOT EXISTS ... USING TTL``: one upload per book at a time; None when taken.
        The lease table is written only with lightweight transactions."""
        upload_id = uuid.uuid4()
        result = await self.db.execute(
            "INSERT INTO contact_upload_leases (login, network, upload_id, started_at) VALUES (?, ?, ?, ?)"
            " IF NOT EXISTS USING TTL ?",
            (login, network, upload_id, clock.now(), self.lease_seconds),
        )
        return upload_id if result.applied else None

    async def renew_upload_lease(self, login: str, network: str, upload_id: uuid.UUID) -> bool:
        """``IF upload_id = ours``: a full lease again from now; False when the lease is not ours."""
        result = await self.db.execute(
            "UPDATE contact_upload_leases USING TTL ? SET upload_id = ?, started_at = ?"
            " WHERE login = ? AND network = ? IF upload_id = ?",
            (self.lease_seconds, upload_id, clock.now(), login, network, upload_id),
        )
        return result.applied

    async def release_upload_lease(self, login: str, network: str, upload_id: uuid.UUID) -> None:
        """``IF upload_id = ours``: never releases a lease another upload took after ours expired."""
        await self.db.execute(
            "DELETE FROM contact_upload_leases WHERE login = ? AND network = ? IF upload_id = ?",
            (login, network, upload_id),
        )


def _call(db: Database, cql: str, params: Params) -> Callable[[], Awaitable[object]]:
    return lambda: db.execute(cql, params)
