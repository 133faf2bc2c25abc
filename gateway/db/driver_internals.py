"""cassandra-driver's internals: the one module of the gateway that reaches into them.

Speed made the gateway go past the driver's documented API in a few places. Every
private name (and every undocumented class or method) it uses is named here, as a
small function, a mix-in or a re-export named for what it does; the rest of the
code imports those. :data:`REACHES` lists each one with what the gateway expects
of it, and ``tests/unit/test_upstream_fences.py`` checks them against the
installed driver in seconds, so an upgrade that moves one fails with its name
rather than as stream ids leaking under load.

Pinned: cassandra-driver 3.30.1 (:data:`PINNED`, ``pyproject.toml``).

Documented extension points come first. The gateway uses
``Cluster(connection_class=...)`` to install its connection classes,
``Session.client_protocol_handler`` to encode and decode what it sends itself,
the default execution profile for that traffic's consistency, timeout, row
factory and load balancing, and ``BatchStatement.clear()`` to release a settled
batch's values (it reached into ``_statements_and_parameters`` before).
Request-init listeners replace no reach: direct reads make no
``ResponseFuture`` for a listener to see, and statements are counted by
``Database`` on both paths.

One row per reach: what is replaced or reached into, why (the measurements are in
``bench/NOTES.md`` under the module named, with the commit that made the change), the
version it was checked against, the test that holds it to the original, and the switch
that turns it off.

1. ``Session._pools``; ``HostConnection.borrow_connection`` (-> connection, stream id),
   ``return_connection``, ``is_shutdown``; ``Connection.send_msg``; ``ExecuteMessage``,
   ``ResultMessage`` -- direct reads (``gateway/db/direct.py``).

   - why: a prepared SELECT goes out without the driver's ``ResponseFuture`` (profile
     lookup, client timestamp under a lock, a ``threading.Event``, a timer, callback
     lists), which was about half of a read's CPU on the loop (``bench/NOTES.md``,
     gateway/db/direct.py; b158ef6).
   - pinned: cassandra-driver 3.30.1.
   - test: ``tests/integration/test_loop_io.py::test_reads_go_the_short_way_with_the_drivers_answers``
     (rows, pages and paging states against the driver's own path),
     ``test_a_read_the_node_refuses_takes_the_drivers_path_and_its_error``,
     ``test_a_read_the_node_forgot_is_prepared_again_and_reads_the_new_columns``.
   - off: ``CASSANDRA_DIRECT_READS=0`` (and ``CASSANDRA_IO=thread``, which has no direct reads).

2. ``Connection._requests``, ``request_ids``, ``lock`` -- a stream id whose message never
   went out is given back (:func:`give_back_unsent_stream`).

   - why: the driver's path keeps it taken; a refused send (overloaded, closing) leaked
     one stream id each (bd217d2).
   - pinned: cassandra-driver 3.30.1.
   - test: ``tests/integration/test_loop_io.py::test_a_read_no_connection_takes_now_gives_its_stream_back``.
   - off: as row 1.

3. ``Connection.orphaned_request_ids``, ``orphaned_threshold``, ``orphaned_threshold_reached``
   -- a timed-out direct read orphans its stream as ``ResponseFuture._on_timeout`` does
   (:func:`orphan_stream`).

   - why: a late answer must never reach the request that reuses its stream id (b158ef6).
   - pinned: cassandra-driver 3.30.1 (``_on_timeout``'s source is fingerprinted below).
   - test: ``tests/integration/test_loop_io.py``
     ``::test_a_read_that_times_out_leaves_its_stream_until_the_late_answer``.
   - off: as row 1.

4. ``Connection._enable_checksumming``, ``_segment_codec``; ``cassandra.segment``'s codec
   -- protocol v5 segment headers with a table CRC-24, written and read in one piece
   (:class:`SegmentOverrides`, ``gateway/db/segments.py``).

   - why: every statement and answer passes a header, and the driver computes its CRC a
     bit at a time and writes and reads it a byte at a time; the table codec does it in
     a fraction of that (``bench/NOTES.md``, gateway/db/segments.py; 9a16b44).
   - pinned: cassandra-driver 3.30.1.
   - test: ``tests/integration/test_loop_io.py::test_the_table_crc24_is_the_drivers``,
     ``test_segments_are_the_drivers_bytes_and_read_back``, ``test_a_damaged_segment_header_is_refused``.
   - off: none (the same bytes on the wire); connections with a compressor keep the driver's codec.

5. ``Connection._process_segment_buffer``, ``_io_buffer`` (``readable_io_bytes``,
   ``io_buffer``, ``_segment_consumed``) -- a segment header that arrives over two reads
   is kept whole (:class:`SegmentOverrides`).

   - why: a driver bug: the first bytes are dropped, the next header is read misaligned
     ("CRC mismatch on header") and the connection dies with every statement on it; an
     attachment download broke so (0f938ff). Reported in
     ``docs/upstream/cassandra-driver-segment-header.md``.
   - pinned: cassandra-driver 3.30.1 (``_process_segment_buffer`` and ``process_io_buffer``
     fingerprinted).
   - test: ``tests/integration/test_loop_io.py::test_answers_read_a_few_bytes_at_a_time_are_whole``
     (both I/O modes; fails without it).
   - off: none: without it both connection classes fail on a slow link.

6. ``Connection._connect_socket``, ``_socket``, ``_send_options_message``, ``_iobuf`` and the
   reactor interface (``push``, which ``send_msg`` calls, ``close``, ``create_timer``,
   ``initialize_reactor``, ``handle_fork``, ``Timer``) -- connections served on the gateway's event loop
   (``gateway/db/loop_io.py``), installed through ``Cluster.connection_class``; the
   driver's own reactors (libev, asyncore, asyncio) implement the same interface.

   - why: no hand-off between the driver's I/O thread and the loop for every answer, and
     the frames of one pass of the loop leave in one write (``bench/NOTES.md``,
     gateway/db/loop_io.py; a18eb25, 8650ac0).
   - pinned: cassandra-driver 3.30.1.
   - test: ``tests/integration/test_loop_io.py`` (loop and thread connections side by side), the ring test.
   - off: ``CASSANDRA_IO=thread``.

7. ``ResponseFuture._paging_state`` -- the next page's state, read in the callback
   (:func:`next_page_state`, ``gateway/db/session.py``).

   - why: the future has no public accessor; the public ``ResultSet.paging_state`` reads this
     attribute, and ``result()`` would build a ``ResultSet`` per statement.
   - pinned: cassandra-driver 3.30.1.
   - test: ``tests/integration/test_loop_io.py::test_pages_follow_a_statement_to_its_last_page``,
     ``test_reads_go_the_short_way_with_the_drivers_answers`` (its reference pages).
   - off: none: this is the driver's own path.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from operator import attrgetter
from typing import Any, ClassVar

from cassandra import protocol as cassandra_protocol
from cassandra import segment as cassandra_segment
from cassandra.cluster import ResponseFuture, Session
from cassandra.connection import Connection, Timer, _ConnectionIOBuffer
from cassandra.pool import HostConnection
from cassandra.protocol import RESULT_KIND_ROWS, ExecuteMessage, ResultMessage
from cassandra.segment import (
    CRC24_INIT,
    CRC24_LENGTH,
    CRC24_POLY,
    CrcException,
    Segment,
    SegmentCodec,
    SegmentHeader,
)

__all__ = [
    "CRC24_INIT",
    "CRC24_LENGTH",
    "CRC24_POLY",
    "PINNED",
    "REACHES",
    "RESULT_KIND_ROWS",
    "CrcException",
    "ExecuteMessage",
    "ResultMessage",
    "Segment",
    "SegmentCodec",
    "SegmentHeader",
    "SegmentOverrides",
    "borrow_stream",
    "connection_pools",
    "feed_received",
    "give_back_unsent_stream",
    "next_page_state",
    "open_socket",
    "orphan_stream",
    "return_stream",
    "send_options",
    "socket_of",
]

#: What ``gateway/db/segments.py`` uses of the driver's (undocumented) segment module.
_SEGMENT_NAMES = (
    "CRC24_INIT",
    "CRC24_LENGTH",
    "CRC24_POLY",
    "CrcException",
    "Segment",
    "SegmentCodec",
    "SegmentHeader",
)

#: The distribution and version :data:`REACHES` was checked against.
PINNED = ("cassandra-driver", "3.30.1")

#: ``(owner, name, expectation)``: what the gateway uses and what it expects of it.
#: Expectations, checked by ``tests/unit/test_upstream_fences.py``:
#: ``attribute`` (the owner has it), ``instance attribute`` (set on its instances:
#: assigned as ``self.<name>`` in the owner's classes, a slot or a dataclass field),
#: ``(a, b, ...)`` (parameters by name, in order; ``...``: more may follow),
#: ``... -> 2-tuple`` (every ``return`` of a tuple has two items, as the caller unpacks),
#: ``fields (a, b)`` (a named tuple's fields), ``defines <name>`` (a function defined
#: inside it), ``source <sha256 prefix>`` (code the gateway copies or patches: any
#: change upstream needs a look at the copy).
REACHES: tuple[tuple[object, str, str], ...] = (
    # Direct reads (gateway/db/direct.py).
    (Session, "_pools", "instance attribute"),
    (Session, "client_protocol_handler", "attribute"),
    (HostConnection, "borrow_connection", "(self, timeout) -> 2-tuple"),
    (HostConnection, "return_connection", "(self, connection, stream_was_orphaned)"),
    (HostConnection, "is_shutdown", "attribute"),
    (Connection, "send_msg", "(self, msg, request_id, cb, encoder, decoder, result_metadata)"),
    (Connection, "_requests", "instance attribute"),
    (Connection, "request_ids", "instance attribute"),
    (Connection, "lock", "instance attribute"),
    (Connection, "in_flight", "instance attribute"),
    (Connection, "endpoint", "instance attribute"),
    (Connection, "orphaned_request_ids", "instance attribute"),
    (Connection, "orphaned_threshold", "attribute"),
    (Connection, "orphaned_threshold_reached", "instance attribute"),
    (
        ExecuteMessage,
        "__init__",
        "(self, query_id, query_params, consistency_level, serial_consistency_level, fetch_size,"
        " paging_state, timestamp, skip_meta, continuous_paging_options, result_metadata_id)",
    ),
    (cassandra_protocol, "ExecuteMessage", "attribute"),
    (cassandra_protocol, "ResultMessage", "attribute"),
    (cassandra_protocol, "RESULT_KIND_ROWS", "attribute"),
    (ResultMessage, "kind", "attribute"),
    (ResultMessage, "column_names", "attribute"),
    (ResultMessage, "parsed_rows", "attribute"),
    (ResultMessage, "paging_state", "attribute"),
    (ResponseFuture, "_on_timeout", "source 28e7a448b2b9"),
    (Connection, "send_msg", "source 04d7ebeb0f0a"),
    # Segments (gateway/db/segments.py).
    (Connection, "_enable_checksumming", "(self)"),
    (Connection, "_enable_checksumming", "source af52aa77c1bf"),
    (Connection, "_process_segment_buffer", "(self)"),
    (Connection, "_process_segment_buffer", "source 2443a0771359"),
    (Connection, "process_io_buffer", "source adaeb1eaae2b"),
    (Connection, "_segment_codec", "instance attribute"),
    (Connection, "_io_buffer", "instance attribute"),
    (Connection, "compressor", "instance attribute"),
    (_ConnectionIOBuffer, "_segment_consumed", "attribute"),
    (_ConnectionIOBuffer, "io_buffer", "attribute"),
    (_ConnectionIOBuffer, "readable_io_bytes", "(self)"),
    *((cassandra_segment, name, "attribute") for name in _SEGMENT_NAMES),
    (SegmentCodec, "__init__", "(self, compressor, decompressor)"),
    (SegmentCodec, "encode_header", "(self, buffer, payload_length, uncompressed_length, is_self_contained)"),
    (SegmentCodec, "decode_header", "(self, buffer)"),
    (SegmentCodec, "header_length_with_crc", "attribute"),
    (SegmentCodec, "FLAG_OFFSET", "attribute"),
    (Segment, "MAX_PAYLOAD_LENGTH", "attribute"),
    (SegmentHeader, "__init__", "(self, payload_length, uncompressed_payload_length, is_self_contained)"),
    # Connections on the event loop (gateway/db/loop_io.py): the reactor interface.
    (Connection, "_connect_socket", "(self)"),
    (Connection, "_socket", "attribute"),
    (Connection, "_send_options_message", "(self)"),
    (Connection, "_iobuf", "attribute"),
    (Connection, "process_io_buffer", "(self)"),
    (Connection, "close", "(self)"),
    (Connection, "defunct", "(self, exc)"),
    (Connection, "error_all_requests", "(self, exc)"),
    (Connection, "connected_event", "instance attribute"),
    (Connection, "is_closed", "instance attribute"),
    (Connection, "is_defunct", "instance attribute"),
    (Connection, "ssl_context", "instance attribute"),
    (Connection, "connect_timeout", "instance attribute"),
    (Connection, "initialize_reactor", "(cls)"),
    (Connection, "handle_fork", "(cls)"),
    (Connection, "create_timer", "(cls, timeout, callback)"),
    (Timer, "cancel", "(self)"),
    (Timer, "finish", "(self, time_now)"),
    # The driver's own path (gateway/db/session.py).
    (ResponseFuture, "_paging_state", "attribute"),
    (ResponseFuture, "has_more_pages", "attribute"),
)


# -- direct reads ------------------------------------------------------------------------


#: ``connection_pools(session)``: the session's pool of each host (``Session._pools``), to
#: look a query plan's hosts up in; ``Session.get_pools()`` lists them without their hosts.
connection_pools: Callable[[Session], dict[Any, Any]] = attrgetter("_pools")

#: ``borrow_stream(pool, timeout) -> (connection, stream id)``, the stream counted in flight;
#: raises when none is free within ``timeout`` (``NoConnectionsAvailable``). The pools of
#: protocol v3 and later (the gateway speaks v5) are ``HostConnection``s. Aliases of the
#: unbound methods: these run twice per direct read, and a wrapper would cost a call more.
borrow_stream: Callable[[Any, float], tuple[Any, int]] = HostConnection.borrow_connection

#: ``return_stream(pool, connection)``: the answer came (or the connection failed), the
#: stream id is free again.
return_stream: Callable[[Any, Any], None] = HostConnection.return_connection


def give_back_unsent_stream(pool: Any, connection: Any, request_id: int) -> None:
    """A stream whose message never went out (``send_msg`` raised: overloaded or closed) is
    free at once. The driver's own path keeps it taken; here it would leak."""
    connection._requests.pop(request_id, None)
    with connection.lock:
        connection.request_ids.append(request_id)
    pool.return_connection(connection)


def orphan_stream(pool: Any, connection: Any, request_id: int) -> bool:
    """``ResponseFuture._on_timeout``'s bookkeeping: the timed-out request's stream id stays
    taken until its late answer comes (the connection then frees it), so no other request
    can receive that answer. False when the connection had already dropped the request
    (it failed, and hands the request its error)."""
    if connection._requests.pop(request_id, None) is None:
        return False
    with connection.lock:
        connection.orphaned_request_ids.add(request_id)
        if len(connection.orphaned_request_ids) >= connection.orphaned_threshold:
            connection.orphaned_threshold_reached = True
    pool.return_connection(connection, stream_was_orphaned=True)
    return True


# -- the driver's own path ---------------------------------------------------------------


def next_page_state(response: ResponseFuture) -> bytes | None:
    """The paging state of the page a settled ``response`` delivered, None on the last page."""
    state: bytes | None = response._paging_state if response.has_more_pages else None
    return state


# -- connection classes ------------------------------------------------------------------


def open_socket(connection: Connection) -> socket.socket:
    """Connect the connection's socket the driver's way (address resolution, socket options,
    TLS): the reactor interface every driver connection class uses."""
    connection._connect_socket()
    sock: socket.socket = connection._socket
    return sock


def socket_of(connection: Connection) -> socket.socket | None:
    sock: socket.socket | None = connection._socket
    return sock


def send_options(connection: Connection) -> None:
    """Start the protocol handshake (``OPTIONS``, then ``STARTUP``) on a connected socket."""
    connection._send_options_message()


def feed_received(connection: Connection, data: bytes) -> None:
    """Hand bytes read from the socket to the connection's frame reader."""
    connection._iobuf.write(data)
    connection.process_io_buffer()


class SegmentOverrides:
    """Mixed in before a driver connection class: two of ``Connection``'s private methods,
    overridden for protocol v5 segments.

    - ``_enable_checksumming`` installs :attr:`uncompressed_segment_codec` (when set and the
      connection compresses nothing) in place of the driver's codec;
    - ``_process_segment_buffer`` keeps a segment header that has not fully arrived: the
      driver's leaves the buffer at its end when fewer than a header's bytes are there, and
      ``process_io_buffer`` then drops them (``docs/upstream/cassandra-driver-segment-header.md``).
      Rewound instead, the buffer is kept from its start until the header is whole.
    """

    #: The codec of uncompressed segments to use instead of the driver's (None: the driver's).
    uncompressed_segment_codec: ClassVar[SegmentCodec | None] = None

    def _enable_checksumming(self: Any) -> None:
        super()._enable_checksumming()  # type: ignore[misc]  # the driver's Connection, next in line
        codec = self.uncompressed_segment_codec
        if codec is not None and not self.compressor:
            self._segment_codec = codec

    def _process_segment_buffer(self: Any) -> None:
        io_buffer = self._io_buffer
        if io_buffer.readable_io_bytes() < self._segment_codec.header_length_with_crc:
            # Not a whole header yet: rewind, so that the buffer is kept from its start.
            io_buffer._segment_consumed = False
            io_buffer.io_buffer.seek(0)
            return
        super()._process_segment_buffer()  # type: ignore[misc]
