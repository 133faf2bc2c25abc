"""Time-based ids of posts and comments.

An id is a version-1 UUID (Cassandra ``timeuuid``) of the moment it was made,
with a random clock sequence and node: two ids made in the same microsecond,
in one process or many, still differ. The id is the item's position in its
timeline, and its time is the item's publish/post time, so the two can never
disagree.
"""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from cassandra.util import datetime_from_uuid1, uuid_from_time


def new_id() -> UUID:
    return uuid_from_time(datetime.now(UTC))


def time_of(item_id: UUID) -> datetime:
    """The id's moment, at the millisecond precision Cassandra timestamps have."""
    moment = datetime_from_uuid1(item_id).replace(tzinfo=UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)
