"""The rooms-scan paging state is parsed and re-encoded before it reaches Cassandra."""

from __future__ import annotations

import re

import pytest

from gateway.rooms.paging_state import InvalidPagingState, checked_paging_state

ROOM = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{2,30}$")


def vint(value: int) -> bytes:
    """Cassandra's unsigned vint, written independently of the module under test."""
    if value < 0x80:
        return bytes([value])
    if value < 0x4000:
        return bytes([0x80 | (value >> 8), value & 0xFF])
    if value < 0x200000:
        return bytes([0xC0 | (value >> 16), (value >> 8) & 0xFF, value & 0xFF])
    raise AssertionError("test helper covers three bytes")


def state(name: bytes, remaining: int = 150, in_partition: int = 2**31 - 1, mark: bytes = b"\x00") -> bytes:
    big = in_partition >= 0x200000
    in_partition_bytes = b"\xf0" + in_partition.to_bytes(4, "big") if big else vint(in_partition)
    return vint(len(name)) + name + mark + vint(remaining) + in_partition_bytes


def test_a_well_formed_state_comes_back_byte_for_byte() -> None:
    for remaining in (0, 1, 127, 128, 300, 70000):
        raw = state(b"lobby", remaining=remaining)
        assert checked_paging_state(raw, ROOM) == raw


def test_a_long_room_name_uses_a_longer_length_prefix() -> None:
    raw = state(b"r" * 31)
    assert checked_paging_state(raw, ROOM) == raw


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x05lob",  # key shorter than its length
        state(b"lobby")[:-1],  # truncated counts
        state(b"lobby") + b"\x00",  # trailing bytes
        state(b"lobby", mark=b"\x01\x00"),  # a clustering mark on a table without clustering columns
        state(b"no room!"),  # not a room name
        state("café-room".encode()),  # not ASCII
        vint(5) + b"lobby\x00" + b"\xf0\x80\x00\x00\x05" + vint(1),  # more rows remaining than an int32
        b"\xff" * 9,  # a nine-byte vint
    ],
)
def test_forged_states_are_refused(raw: bytes) -> None:
    with pytest.raises(InvalidPagingState):
        checked_paging_state(raw, ROOM)


def test_the_state_is_rebuilt_from_its_parts() -> None:
    # A non-minimal vint for the key length parses to the same value and is sent minimally.
    padded = b"\x80\x05" + b"lobby" + b"\x00" + vint(10) + vint(1)
    assert checked_paging_state(padded, ROOM) == state(b"lobby", remaining=10, in_partition=1)
