"""The fan-out jobs of linked identities in Cassandra (see ``cql/010_contacts_fanout.cql``).

Every write is a lightweight transaction, so a job row never mixes LWT and
plain writes: the link creates it ``IF NOT EXISTS``, a worker claims it ``IF
lease_until < now``, and only the lease holder (``IF holder = <its id>``)
records progress or deletes it. Lease times are the workers' wall clocks:
lease lengths are seconds, clock skew between gateway hosts must stay well
below that (NTP).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from gateway.contacts.records import Job, JobKey
from gateway.db import clock
from gateway.db.session import Database

_NEVER_LEASED = datetime(1970, 1, 1, tzinfo=UTC)
_KEY = "shard = ? AND identity_hash = ? AND owner = ?"


_COLUMNS = "identity_hash, owner, network, linked_at, after_login, done, lease_until"


class FanoutJobs:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(self, key: JobKey, network: str, linked_at: datetime) -> bool:
        """Write the job unless one for this identity and owner is still running
        (it will reach every uploader: see ``gateway/contacts/service.py``)."""
        result = await self.db.execute(
            "INSERT INTO contact_fanouts (shard, identity_hash, owner, network, linked_at, done, lease_until)"
            " VALUES (?, ?, ?, ?, ?, 0, ?) IF NOT EXISTS",
            (*key.params, network, linked_at, _NEVER_LEASED),
        )
        return result.applied

    async def waiting(self, shard: int, limit: int) -> list[Job]:
        """The first ``limit`` jobs of a shard (a shard holds only unfinished jobs)."""
        result = await self.db.execute(
            f"SELECT {_COLUMNS} FROM contact_fanouts WHERE shard = ? LIMIT ?",
            (shard, limit),
            fetch_size=limit,
        )
        return [Job.from_row(row) for row in result.rows]

    async def claim(self, key: JobKey, holder: uuid.UUID, lease: float) -> Job | None:
        """Take the job if its lease has run out (or it never had one); the job as it
        stood, or None when it is leased to another worker or gone."""
        now = clock.now()
        result = await self.db.execute(
            f"UPDATE contact_fanouts SET holder = ?, lease_until = ? WHERE {_KEY} IF lease_until < ?",
            (holder, now + timedelta(seconds=lease), *key.params, now),
        )
        if not result.applied:
            return None
        row = await self.db.execute(f"SELECT {_COLUMNS} FROM contact_fanouts WHERE {_KEY}", key.params)
        found = row.one()
        return Job.from_row(found) if found is not None else None

    async def progress(
        self, key: JobKey, holder: uuid.UUID, lease: float, *, after_login: str, done: int
    ) -> bool:
        """Record how far the job got and extend the lease; False when the lease was lost."""
        result = await self.db.execute(
            "UPDATE contact_fanouts SET after_login = ?, done = ?, lease_until = ?"
            f" WHERE {_KEY} IF holder = ?",
            (after_login, done, clock.now() + timedelta(seconds=lease), *key.params, holder),
        )
        return result.applied

    async def finish(self, key: JobKey, holder: uuid.UUID) -> bool:
        result = await self.db.execute(
            f"DELETE FROM contact_fanouts WHERE {_KEY} IF holder = ?", (*key.params, holder)
        )
        return result.applied
