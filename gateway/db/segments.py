"""Protocol v5 segments on the gateway's Cassandra connections.

Protocol v5 wraps frames in segments, each with a 3-byte header and its CRC-24.
:class:`WholeSegments` is mixed into the connection classes the gateway uses, on
its event loop (:class:`gateway.db.loop_io.LoopConnection`) or on the driver's
I/O thread (:class:`ThreadConnection`), for two things:

- **Reads that end within a segment header keep those bytes.** When fewer than
  a header's 6 bytes are buffered, the driver's ``_process_segment_buffer``
  returns with the buffer at its end, and ``process_io_buffer`` then cuts the
  buffer from there: the header's first bytes are lost, the next header is read
  misaligned ("CRC mismatch on header ..."), and the connection is closed with
  every statement on it. A large answer (an attachment's chunks, a long page)
  arrives over many reads and meets this now and then; a slow link often.
  The override lives with the driver's other internals
  (:class:`gateway.db.driver_internals.SegmentOverrides`); the bug is written up
  for the driver in ``docs/upstream/cassandra-driver-segment-header.md``.
- **Headers are encoded and checked a byte at a time from a table**, in one
  piece, with the driver's bytes on the wire: every statement sent and every
  answer read passes one (timings: ``bench/NOTES.md``).
"""

from __future__ import annotations

from typing import Any

from cassandra import DriverException
from cassandra.cluster import DefaultConnection

from gateway.db.driver_internals import (
    CRC24_INIT,
    CRC24_LENGTH,
    CRC24_POLY,
    CrcException,
    Segment,
    SegmentCodec,
    SegmentHeader,
    SegmentOverrides,
)


def _crc24_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= CRC24_POLY
        table.append(crc)
    return tuple(table)


_CRC24_TABLE = _crc24_table()
_SELF_CONTAINED = 1 << SegmentCodec.FLAG_OFFSET


def crc24(value: int, length: int) -> int:
    """The driver's ``compute_crc24`` (the CRC-24 of ``length`` bytes of ``value``, least
    significant first, as protocol v5 segment headers carry it) a byte at a time from a
    table instead of a bit at a time (``bench/NOTES.md``)."""
    crc: int = CRC24_INIT
    table = _CRC24_TABLE
    for _ in range(length):
        crc = ((crc << 8) & 0xFFFFFF) ^ table[((crc >> 16) ^ value) & 0xFF]
        value >>= 8
    return crc


class UncompressedSegmentCodec(SegmentCodec):  # type: ignore[misc]  # the driver is untyped
    """The driver's codec of uncompressed protocol v5 segments, with the same bytes on the
    wire, and its headers written and read in one piece (timings in ``bench/NOTES.md``)."""

    def __init__(self) -> None:
        super().__init__(None, None)

    def encode_header(
        self, buffer: Any, payload_length: int, uncompressed_length: int, is_self_contained: bool
    ) -> None:
        if payload_length > Segment.MAX_PAYLOAD_LENGTH:
            raise DriverException("Payload length exceed Segment.MAX_PAYLOAD_LENGTH")
        header = payload_length | _SELF_CONTAINED if is_self_contained else payload_length
        crc = crc24(header, 3)
        buffer.write((header | crc << 24).to_bytes(6, "little"))

    def decode_header(self, buffer: Any) -> SegmentHeader:
        raw = int.from_bytes(buffer.read(3 + CRC24_LENGTH), "little")
        header = raw & 0xFFFFFF
        expected = raw >> 24
        actual = crc24(header, 3)
        if actual != expected:
            raise CrcException(
                f"CRC mismatch on header {header:x}. Received {expected:x}, computed {actual:x}."
            )
        return SegmentHeader(
            header & Segment.MAX_PAYLOAD_LENGTH, -1, bool(header >> SegmentCodec.FLAG_OFFSET & 1)
        )


SEGMENT_CODEC = UncompressedSegmentCodec()


class WholeSegments(SegmentOverrides):
    """Mixed in before the driver's connection class (see the module's docstring): the
    overrides of :class:`~gateway.db.driver_internals.SegmentOverrides`, with this module's codec."""

    uncompressed_segment_codec = SEGMENT_CODEC


class ThreadConnection(WholeSegments, DefaultConnection):  # type: ignore[misc]  # the driver is untyped
    """The driver's own connection (libev, on its I/O thread) with whole segment headers."""
