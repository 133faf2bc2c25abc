"""``DateTime``: ISO 8601 in UTC, e.g. ``2026-11-22T05:28:00.123Z``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import strawberry
from strawberry.types.scalar import ScalarDefinition


def serialize_datetime(value: datetime) -> str:
    """Naive values are UTC (the driver reads timestamps so): formatted as they are, with
    one C-level ``isoformat``. Aware values (the stores' records are UTC) are converted
    to UTC and formatted from their fields, cheaper than ``isoformat`` with its "+00:00"
    cut (``bench/NOTES.md``)."""
    zone = value.tzinfo
    if zone is None:
        return value.isoformat(timespec="milliseconds") + "Z"
    if zone is not UTC:
        value = value.astimezone(UTC)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (  # noqa: UP031  # faster than f-strings here
        value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond // 1000,
    )  # fmt: skip


def parse_datetime(value: object) -> datetime:
    if not isinstance(value, str):
        raise ValueError("DateTime must be an ISO 8601 string")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


DateTime = strawberry.scalar(
    name="DateTime",
    description="An ISO 8601 instant in UTC, e.g. 2026-11-22T05:28:00.123Z.",
    serialize=serialize_datetime,
    parse_value=parse_datetime,
)

SCALAR_OVERRIDES: Mapping[object, ScalarDefinition] = {datetime: DateTime}
