"""Time as Cassandra stores it: UTC, millisecond precision."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    moment = datetime.now(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def utc(moment: datetime) -> datetime:
    """A timestamp read from Cassandra (naive UTC) as an aware datetime."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
