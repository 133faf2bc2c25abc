"""DateTime values are written as UTC instants at millisecond precision, whatever their zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.graph.scalars import parse_datetime, serialize_datetime


@pytest.mark.parametrize(
    "value",
    [
        datetime(2026, 11, 22, 5, 28, 0, 123456),  # naive: UTC, as the driver reads timestamps
        datetime(2026, 11, 22, 5, 28, 0, 123456, tzinfo=UTC),
        datetime(2026, 11, 22, 7, 28, 0, 123456, tzinfo=timezone(timedelta(hours=2))),
        datetime(2026, 11, 21, 23, 58, 0, 123999, tzinfo=timezone(timedelta(hours=-5, minutes=-30))),
    ],
)
def test_every_zone_is_written_as_the_same_utc_instant(value: datetime) -> None:
    assert serialize_datetime(value) == "2026-11-22T05:28:00.123Z"


def test_whole_seconds_keep_their_milliseconds_and_round_trip() -> None:
    value = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    written = serialize_datetime(value)
    assert written == "2026-01-02T03:04:05.000Z"
    assert parse_datetime(written) == value


ZONES = st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=45))])


@given(st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30)), ZONES)
def test_written_as_isoformat_in_utc_with_milliseconds(moment: datetime, zone: tzinfo | None) -> None:
    value = moment.replace(tzinfo=zone)
    in_utc = value if zone is None else value.astimezone(UTC).replace(tzinfo=None)
    assert serialize_datetime(value) == in_utc.isoformat(timespec="milliseconds") + "Z"
