"""The contacts domain's rows as records: linked identities, address-book entries,
fan-out jobs and pending verifications.

Tables keyed by identity hold only its ``identity_hash`` (HMAC-SHA256 under the
pepper); the clear value stays in the user's own rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gateway.db import clock
from gateway.db.session import Row


@dataclass(frozen=True)
class LinkedIdentity:
    network: str
    network_id: str
    identity_hash: bytes
    linked_at: datetime


@dataclass(frozen=True)
class BookEntry:
    """One contact of a user's address book.

    ``network_id`` is None only for a leftover row (a discovery recorded for a
    contact that was being removed at that moment); such rows are never shown.
    """

    network: str
    identity_hash: bytes
    network_id: str | None
    name: str | None
    owner: str | None
    discovered_at: datetime | None

    @classmethod
    def from_row(cls, row: Row) -> BookEntry:
        discovered = row.get("discovered_at")
        return cls(
            network=row["network"],
            identity_hash=bytes(row["identity_hash"]),
            network_id=row.get("network_id"),
            name=row.get("name"),
            owner=row.get("owner"),
            discovered_at=clock.utc(discovered) if discovered else None,
        )

    @property
    def leftover(self) -> bool:
        return self.network_id is None


#: Partitions the jobs are spread over. Fixed for a keyspace's life: a worker looks
#: for jobs in exactly these shards.
SHARDS = 16


def shard_of(identity_hash: bytes) -> int:
    return identity_hash[0] % SHARDS


@dataclass(frozen=True)
class JobKey:
    identity_hash: bytes
    owner: str

    @property
    def params(self) -> tuple[int, bytes, str]:
        return shard_of(self.identity_hash), self.identity_hash, self.owner


@dataclass(frozen=True)
class Job:
    key: JobKey
    network: str
    linked_at: datetime
    #: The last uploader (in login order) whose discovery is recorded; None: none yet.
    after_login: str | None
    done: int
    lease_until: datetime

    @classmethod
    def from_row(cls, row: Row) -> Job:
        return cls(
            key=JobKey(bytes(row["identity_hash"]), row["owner"]),
            network=row["network"],
            linked_at=clock.utc(row["linked_at"]),
            after_login=row["after_login"],
            done=int(row["done"] or 0),
            lease_until=clock.utc(row["lease_until"]),
        )


@dataclass(frozen=True)
class Pending:
    """A stored verification; ``code_hash`` is None once the code is burnt."""

    code_hash: bytes | None
    expires_at: datetime
    wrong_codes: int

    def seconds_left(self) -> int:
        return max(1, int((self.expires_at - clock.now()).total_seconds()) + 1)
