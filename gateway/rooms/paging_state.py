"""Checking a client-supplied paging state, and reading the room name it holds.

``rooms`` cursors issued by earlier gateways carry the driver's paging state,
and come back from clients, who may alter them. Cassandra answers a paging
state it cannot parse with a *protocol* error, on which the driver closes the
connection and marks the node down: one forged cursor would cut the gateway
off from Cassandra. Today's cursors hold a room name and the gateway never
sends a client's paging state to Cassandra; an older cursor is parsed here
and only the room name it holds is used (:func:`paging_state_key`), so a
forged one is ``BAD_USER_INPUT`` and never reaches the driver.

The format (Cassandra's ``PagingState``, protocol v4 and later), for the rooms
table, whose partition key is the room name and which has no clustering
columns::

    [vint length][partition key: the last room name read]
    [vint length = 0][row mark: empty without clustering columns]
    [unsigned vint][rows remaining under the query's limit]
    [unsigned vint][rows remaining in the partition under a per-partition limit]

A state that parses names some room name; paging from it simply continues
after that name's token, which reveals nothing a client could not page to.
"""

from __future__ import annotations

import re

MAX_INT32 = 2**31 - 1


class InvalidPagingState(ValueError):
    """A cursor that does not hold a paging state of the rooms scan."""


def _read_unsigned_vint(data: bytes, offset: int) -> tuple[int, int]:
    """Cassandra's ``VIntCoding.readUnsignedVInt``: the count of leading one bits of
    the first byte is the count of bytes that follow."""
    if offset >= len(data):
        raise InvalidPagingState("truncated")
    first = data[offset]
    extra = 8 - (~first & 0xFF).bit_length()
    if offset + 1 + extra > len(data):
        raise InvalidPagingState("truncated")
    value = first & (0xFF >> extra)
    for byte in data[offset + 1 : offset + 1 + extra]:
        value = (value << 8) | byte
    return value, offset + 1 + extra


def _write_unsigned_vint(value: int) -> bytes:
    """Cassandra's ``VIntCoding.writeUnsignedVInt`` (values up to 2**56 - 1)."""
    size = 1
    while size < 8 and value >= 1 << (7 * size):
        size += 1
    encoded = bytearray(value.to_bytes(size, "big"))
    encoded[0] |= ~(0xFF >> (size - 1)) & 0xFF
    return bytes(encoded)


def paging_state_key(raw: bytes, key_pattern: re.Pattern[str]) -> str:
    """The room name a rooms-scan paging state continues after; raises
    :class:`InvalidPagingState` unless ``raw`` is one whose key matches ``key_pattern``."""
    checked = checked_paging_state(raw, key_pattern)
    key_length, offset = _read_unsigned_vint(checked, 0)
    return checked[offset : offset + key_length].decode("ascii")


def checked_paging_state(raw: bytes, key_pattern: re.Pattern[str]) -> bytes:
    """``raw`` re-encoded after checking it is a rooms-scan paging state whose partition
    key matches ``key_pattern``; raises :class:`InvalidPagingState` otherwise."""
    key_length, offset = _read_unsigned_vint(raw, 0)
    key_bytes = raw[offset : offset + key_length]
    if len(key_bytes) != key_length:
        raise InvalidPagingState("truncated partition key")
    try:
        key = key_bytes.decode("ascii")
    except UnicodeDecodeError as exc:
        raise InvalidPagingState("partition key is not a room name") from exc
    if not key_pattern.match(key):
        raise InvalidPagingState("partition key is not a room name")
    mark_length, offset = _read_unsigned_vint(raw, offset + key_length)
    if mark_length != 0:
        raise InvalidPagingState("the rooms table has no clustering columns")
    remaining, offset = _read_unsigned_vint(raw, offset)
    remaining_in_partition, offset = _read_unsigned_vint(raw, offset)
    if offset != len(raw) or remaining > MAX_INT32 or remaining_in_partition > MAX_INT32:
        raise InvalidPagingState("not a paging state")
    return b"".join(
        (
            _write_unsigned_vint(key_length),
            key_bytes,
            _write_unsigned_vint(0),
            _write_unsigned_vint(remaining),
            _write_unsigned_vint(remaining_in_partition),
        )
    )
