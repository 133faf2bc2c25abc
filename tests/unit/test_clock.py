"""Timeuuids and their moments (``gateway/db/clock.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from gateway.db.clock import micros_of, new_timeuuid, time_of

#: 100-nanosecond intervals between the UUID epoch (1582-10-15) and the Unix epoch.
UUID_EPOCH_OFFSET = 0x01B21DD213814000


@given(st.integers(min_value=-UUID_EPOCH_OFFSET * 100, max_value=(2**60 - 1) * 100 - UUID_EPOCH_OFFSET * 100))
def test_the_moment_read_from_the_integer_is_the_uuid_s_own_time(ns: int) -> None:
    item_id = new_timeuuid(ns)
    assert micros_of(item_id) == (item_id.time - UUID_EPOCH_OFFSET) // 10 == ns // 1000
    assert time_of(item_id) == datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ns // 1_000_000)
