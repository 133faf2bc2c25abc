"""``DateTime``: ISO 8601 in UTC, e.g. ``2026-11-22T05:28:00.123Z``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import strawberry
from strawberry.types.scalar import ScalarDefinition


def serialize_datetime(value: datetime) -> str:
    """Naive values are UTC (the driver reads timestamps so): formatted as they are, with
    one C-level ``isoformat``; UTC values (the stores' records) drop their "+00:00";
    other aware values are converted first."""
    zone = value.tzinfo
    if zone is None:
        return value.isoformat(timespec="milliseconds") + "Z"
    if zone is UTC:
        return value.isoformat(timespec="milliseconds")[:-6] + "Z"
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


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
