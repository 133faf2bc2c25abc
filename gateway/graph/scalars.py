"""The custom scalars as the schema declares them.

``DateTime``: an RFC 3339 instant in UTC, e.g. ``2026-11-22T05:28:00.123Z``.
``Upload``: Strawberry's file upload, declared here with what it is and the spec
it follows (``@specifiedBy``), so client code generators need not guess either.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import strawberry
from strawberry.file_uploads import Upload
from strawberry.types.scalar import ScalarDefinition

RFC_3339 = "https://datatracker.ietf.org/doc/html/rfc3339"
MULTIPART_REQUEST_SPEC = "https://github.com/jaydenseric/graphql-multipart-request-spec"


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
    description="An instant, as an RFC 3339 date-time string in UTC with milliseconds: "
    "`2026-11-22T05:28:00.123Z`. Always written with the `Z` offset and three fraction digits, so two "
    "values compare as strings in time order; a code generator can map it to a string type.",
    specified_by_url=RFC_3339,
    serialize=serialize_datetime,
    parse_value=parse_datetime,
)


def _as_is(value: Any) -> Any:
    """An upload's value passes as it is, as in Strawberry's own ``Upload``: the view puts the
    file part itself in the variables."""
    return value


UploadScalar = strawberry.scalar(
    name="Upload",
    description="A file sent with the request as a part of a `multipart/form-data` body, as the GraphQL "
    "multipart request spec says (apollo-upload-client and most upload links speak it; the request "
    "must carry `GraphQL-Preflight: 1` or `Apollo-Require-Preflight`). Only an input: in a variable, "
    "a browser `File` or `Blob`. Sizes are bounded where it is taken (`EmailInput.attachments`).",
    specified_by_url=MULTIPART_REQUEST_SPEC,
    serialize=_as_is,
    parse_value=_as_is,
)

SCALAR_OVERRIDES: Mapping[object, ScalarDefinition] = {datetime: DateTime, Upload: UploadScalar}
