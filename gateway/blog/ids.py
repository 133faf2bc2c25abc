"""Time-based ids of posts and comments.

An id is a version-1 UUID (Cassandra ``timeuuid``) of the moment it was made,
with a random clock sequence and node: two ids made in the same microsecond,
in one process or many, still differ. The id is the item's position in its
timeline, and its time is the item's publish/post time, so the two can never
disagree.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from cassandra.util import uuid_from_time

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: 100-nanosecond intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


def new_id() -> UUID:
    return uuid_from_time(datetime.now(UTC))


def time_of(item_id: UUID) -> datetime:
    """The id's moment, at the millisecond precision Cassandra timestamps have
    (the driver's ``datetime_from_uuid1`` arithmetic on the id's 60-bit timestamp)."""
    value = item_id.int
    ticks = ((value >> 64) & 0x0FFF) << 48 | ((value >> 80) & 0xFFFF) << 32 | value >> 96
    moment = _EPOCH + timedelta(seconds=(ticks - _UUID_EPOCH_OFFSET) / 1e7)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)
