"""Cassandra connections on the gateway's event loop (``CASSANDRA_IO=loop``, the default).

The driver still reaches these connections from its own threads (control
connection, heartbeats, pool upkeep, its scheduler, ``Session.execute`` in
worker threads): those calls must reach the loop, and the loop's answers must
reach them, against the real node.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import pytest
from aiohttp import web
from cassandra import InvalidRequest
from cassandra.cluster import DefaultConnection, ResponseFuture
from cassandra.pool import HostConnection
from cassandra.segment import CrcException, SegmentCodec, compute_crc24
from hypothesis import given
from hypothesis import strategies as st

from gateway.db.loop_io import LoopConnection, LoopTimer
from gateway.db.segments import SEGMENT_CODEC, ThreadConnection, WholeSegments, crc24
from gateway.db.session import CassandraUnavailable, Database, RequestMetrics, measuring
from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.support.memory import cyclic_garbage
from tests.support.tcp_proxy import TcpProxy

USER = "SELECT login FROM users WHERE login = ?"
TABLES = "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?"


def _points(settings: Settings) -> tuple[str, ...]:
    return settings.contact_points or ("127.0.0.1",)


@pytest.fixture
async def loop_db(base_settings: Settings, server: object) -> AsyncIterator[Database]:
    """A Database on loop connections with direct reads, whatever the environment says."""
    settings = replace(base_settings, contact_points=_points(base_settings), cassandra_io="loop")
    db = Database(replace(settings, direct_reads=True))
    await db.open()
    db.use_keyspace(base_settings.keyspace)
    yield db
    await asyncio.to_thread(db.shutdown)


@contextlib.asynccontextmanager
async def _through_proxy(settings: Settings, **overrides: Any) -> AsyncIterator[tuple[Database, TcpProxy]]:
    """A Database of its own whose every connection passes a TcpProxy the test slows down."""
    proxy = TcpProxy("127.0.0.1", settings.cassandra_port)
    await proxy.start()
    db = Database(replace(settings, contact_points=("127.0.0.1",), cassandra_port=proxy.port, **overrides))
    await db.open()
    db.use_keyspace(settings.keyspace)
    try:
        await db.execute(USER, ("nobody-at-all",))  # prepared while the network is fast
        yield db, proxy
    finally:
        if db.connected:
            await asyncio.to_thread(db.shutdown)
        await proxy.cut()


def _connections(db: Database) -> list[LoopConnection]:
    pools = db.session.get_pools()
    return [connection for pool in pools for connection in pool.get_connections()]


async def test_the_served_gateway_talks_to_cassandra_as_cassandra_io_says(
    app: web.Application, base_settings: Settings
) -> None:
    """On its own loop by default; on the driver's I/O thread with ``CASSANDRA_IO=thread``
    (the suite's run on the reference paths)."""
    db = app[SERVICES].db
    connection_class = db.session.cluster.connection_class
    connections = _connections(db)
    control = db.session.cluster.control_connection._connection
    assert connections
    if base_settings.cassandra_io == "loop":
        assert issubclass(connection_class, LoopConnection)
        assert connection_class.loop is asyncio.get_running_loop()
        assert all(isinstance(c, LoopConnection) and c._transport is not None for c in connections)
        assert isinstance(control, LoopConnection)
        assert (db._direct is not None) is base_settings.direct_reads
    else:
        assert issubclass(connection_class, ThreadConnection)
        assert all(isinstance(c, ThreadConnection) for c in [*connections, control])
        assert db._direct is None
    # Protocol v5 segments, framed by the gateway's own codec either way.
    assert all(c._is_checksumming_enabled and c._segment_codec is SEGMENT_CODEC for c in connections)


@given(st.integers(min_value=0, max_value=2**64 - 1), st.integers(min_value=0, max_value=8))
def test_the_table_crc24_is_the_drivers(value: int, length: int) -> None:
    assert crc24(value, length) == compute_crc24(value, length)


@given(st.binary(max_size=512), st.sampled_from([0, 1, 2, 300, 128 * 1024 - 1, 128 * 1024, 300_000]))
def test_segments_are_the_drivers_bytes_and_read_back(sample: bytes, length: int) -> None:
    payload = (sample or b"\0") * (length // max(len(sample), 1) + 1)
    payload = payload[:length]
    ours, drivers = io.BytesIO(), io.BytesIO()
    SEGMENT_CODEC.encode(ours, payload)
    SegmentCodec().encode(drivers, payload)
    assert ours.getvalue() == drivers.getvalue()
    wire, read = io.BytesIO(ours.getvalue()), b""
    while wire.tell() < len(ours.getvalue()):
        header = SEGMENT_CODEC.decode_header(wire)
        assert header.is_self_contained == (length <= 128 * 1024 - 1)
        read += SEGMENT_CODEC.decode(wire, header).payload
    assert read == payload


@pytest.mark.parametrize("cassandra_io", ["loop", "thread"])
async def test_answers_read_a_few_bytes_at_a_time_are_whole(
    base_settings: Settings, server: object, cassandra_io: str
) -> None:
    """A read that ends within a segment header keeps those bytes for the next read. The
    driver's own framing drops them when fewer than a header's 6 bytes are buffered (its
    next header read is then misaligned: "CRC mismatch on header", the connection dies);
    a large answer arriving over many reads meets this now and then, a slow link often."""
    async with _through_proxy(base_settings, cassandra_io=cassandra_io) as (db, proxy):
        proxy.answer_pieces = 5
        logins = [f"piece-{n}" for n in range(8)]
        results = await asyncio.gather(*(db.execute(USER, (login,)) for login in logins))
        assert [result.rows for result in results] == [[] for _ in logins]
        tables = await db.execute(TABLES, (base_settings.keyspace,))
        assert {"users", "sessions"} <= {row["table_name"] for row in tables.rows}


def test_a_damaged_segment_header_is_refused() -> None:
    wire = io.BytesIO()
    SEGMENT_CODEC.encode(wire, b"a frame")
    damaged = bytearray(wire.getvalue())
    damaged[1] ^= 0x04
    with pytest.raises(CrcException, match="CRC mismatch on header"):
        SEGMENT_CODEC.decode_header(io.BytesIO(bytes(damaged)))


async def test_thread_io_is_the_drivers_own(base_settings: Settings, server: object) -> None:
    db = Database(replace(base_settings, contact_points=_points(base_settings), cassandra_io="thread"))
    await db.open()
    db.use_keyspace(base_settings.keyspace)
    try:
        connection_class = db.session.cluster.connection_class
        assert not issubclass(connection_class, LoopConnection)
        assert issubclass(connection_class, DefaultConnection) and issubclass(connection_class, WholeSegments)
        assert (await db.execute(USER, ("nobody-at-all",))).rows == []
    finally:
        await asyncio.to_thread(db.shutdown)


async def test_concurrent_statements_each_get_their_own_answer(
    loop_db: Database, base_settings: Settings
) -> None:
    """400 statements in flight at once, over the loop connections' shared stream ids."""
    keyspaces = ["system", "system_schema", base_settings.keyspace, "no_such_keyspace"] * 100
    results = await asyncio.gather(*(loop_db.execute(TABLES, (name,)) for name in keyspaces))
    expected: dict[str, list[str]] = {}
    for name, result in zip(keyspaces, results, strict=True):
        tables = sorted(row["table_name"] for row in result.rows)
        assert tables == expected.setdefault(name, tables)
    assert expected["no_such_keyspace"] == []
    assert "users" in expected[base_settings.keyspace]
    assert "tables" in expected["system_schema"]


async def test_blocking_calls_from_worker_threads_share_the_loop_connections(
    loop_db: Database, base_settings: Settings
) -> None:
    """The driver's synchronous API, used from threads (migrations, prepares), while the loop
    sends statements of its own over the same connections."""
    session = loop_db.session
    loop_thread = threading.get_ident()

    def blocking() -> list[str]:
        assert threading.get_ident() != loop_thread
        rows = session.execute(TABLES.replace("?", "%s"), (base_settings.keyspace,), timeout=10)
        return sorted(row["table_name"] for row in rows)

    threaded = asyncio.gather(*(asyncio.to_thread(blocking) for _ in range(16)))
    on_loop = asyncio.gather(*(loop_db.execute(TABLES, (base_settings.keyspace,)) for _ in range(64)))
    from_threads, results = await asyncio.gather(threaded, on_loop)
    from_loop = [sorted(row["table_name"] for row in result.rows) for result in results]
    assert all(tables == from_threads[0] for tables in from_threads + from_loop)
    assert "users" in from_threads[0]


async def test_an_unanswered_statement_times_out_on_the_loop_and_the_connection_carries_on(
    base_settings: Settings, server: object
) -> None:
    async with _through_proxy(base_settings, request_timeout=1.0, cassandra_io="loop") as (db, proxy):
        proxy.latency = 3.0
        started = time.monotonic()
        with pytest.raises(CassandraUnavailable, match=r"(?i)timed out|timeout"):
            await db.execute(USER, ("nobody-at-all",))
        assert 0.9 < time.monotonic() - started < 2.5  # the request timer fired, on time
        proxy.latency = 0.0
        deadline = time.monotonic() + 15
        while True:  # the late answer is dropped; the same connections answer what comes next
            try:
                assert (await db.execute(USER, ("nobody-at-all",))).rows == []
                break
            except CassandraUnavailable:
                assert time.monotonic() < deadline, "the connection never answered again"
                await asyncio.sleep(0.5)


@pytest.mark.parametrize("io", ["loop", "thread"])
async def test_shutdown_ends_every_statement_in_flight(
    base_settings: Settings, server: object, io: str
) -> None:
    """Closing the cluster while statements are in flight: each one ends at once with
    UNAVAILABLE. (The driver alone leaves them to their request timeout: its retry on
    another host goes to a scheduler that has stopped.)"""
    async with _through_proxy(base_settings, request_timeout=30.0, cassandra_io=io) as (db, proxy):
        proxy.latency = 1.0
        in_flight = [asyncio.ensure_future(db.execute(USER, ("nobody-at-all",))) for _ in range(20)]
        await asyncio.sleep(0.2)
        started = time.monotonic()
        await asyncio.to_thread(db.shutdown)
        outcomes = await asyncio.wait_for(asyncio.gather(*in_flight, return_exceptions=True), timeout=10)
        assert time.monotonic() - started < 10
        assert all(isinstance(o, CassandraUnavailable) for o in outcomes), outcomes


async def test_a_connection_is_never_opened_on_the_loop_it_serves() -> None:
    """Opening waits for the loop to attach the socket: on the loop itself that would hang it."""
    connection_class = LoopConnection.for_running_loop()
    with pytest.raises(RuntimeError, match="event loop it serves"):
        connection_class("127.0.0.1")


async def test_timers_started_and_cancelled_from_other_threads() -> None:
    connection_class = LoopConnection.for_running_loop()
    loop = asyncio.get_running_loop()
    fired: list[str] = []
    on_loop_thread = threading.get_ident()

    def fire(name: str) -> None:
        assert threading.get_ident() == on_loop_thread
        fired.append(name)

    def from_thread() -> None:
        connection_class.create_timer(0.05, lambda: fire("kept"))
        connection_class.create_timer(0.05, lambda: fire("cancelled")).cancel()
        late = connection_class.create_timer(0.05, lambda: fire("cancelled later"))
        time.sleep(0.01)
        late.cancel()

    await asyncio.to_thread(from_thread)
    connection_class.create_timer(0.05, lambda: fire("on loop"))
    connection_class.create_timer(0.05, lambda: fire("cancelled on loop")).cancel()
    await asyncio.sleep(0.3)
    assert sorted(fired) == ["kept", "on loop"]
    assert loop.is_running()


async def test_a_settled_statement_leaves_no_cycle_behind(base_settings: Settings, server: object) -> None:
    """A statement the driver's way on the loop's connections (direct reads off, so that reads
    take it too): the request keeps its timer after it settles; the timer lets go of the
    request's method, so the two are freed at once rather than by a garbage collection.
    Only this Database's are looked at: other gateways of the run may be on the driver's
    thread, where a request and its timer are a cycle."""
    settings = replace(base_settings, contact_points=_points(base_settings), cassandra_io="loop")
    db = Database(replace(settings, direct_reads=False))
    await db.open()
    db.use_keyspace(base_settings.keyspace)
    try:
        session, connection_class = db.session, db.session.cluster.connection_class
        await db.execute(USER, ("nobody-at-all",))
        with _driver_calls(db) as calls, cyclic_garbage() as garbage:
            for _ in range(50):
                await db.execute(USER, ("nobody-at-all",))
        assert len(calls) == 50
        assert not [o for o in garbage if isinstance(o, ResponseFuture) and o.session is session]
        assert not [o for o in garbage if isinstance(o, LoopTimer) and o._owner is connection_class]
    finally:
        await asyncio.to_thread(db.shutdown)


async def test_pages_follow_a_statement_to_its_last_page(loop_db: Database) -> None:
    """``Database.pages`` (the backfills' table scans) yields every page once, in order."""
    pages = [page async for page in loop_db.pages(TABLES, ("system_schema",), fetch_size=3)]
    assert len(pages) > 2
    assert all(0 < len(page) <= 3 for page in pages[:-1])
    rows = [row["table_name"] for page in pages for row in page]
    whole = [row["table_name"] for row in (await loop_db.execute(TABLES, ("system_schema",))).rows]
    assert rows == whole
    assert rows == [row["table_name"] for row in await loop_db.execute_all(TABLES, ("system_schema",))]


async def test_statements_sent_in_one_pass_of_the_loop_leave_in_one_write(loop_db: Database) -> None:
    await loop_db.execute(TABLES, ("system",))  # prepared: nothing else goes out below
    connections = [c for pool in loop_db.session._pools.values() for c in pool.get_connections()]
    writes: list[int] = []
    for connection in connections:

        def counted(data: bytes, write: Any = connection._transport.write) -> None:
            writes.append(len(data))
            write(data)

        connection._transport.write = counted
    try:
        results = await asyncio.gather(*(loop_db.execute(TABLES, ("system",)) for _ in range(20)))
    finally:
        for connection in connections:
            del connection._transport.write
    assert all(result.rows for result in results)
    # 20 frames; one write per connection, and room for a heartbeat.
    assert 1 <= len(writes) <= len(connections) + 1, writes


# -- reads the short way (gateway/db/direct.py) ----------------------------------------------


@contextlib.contextmanager
def _driver_calls(db: Database) -> Iterator[list[object]]:
    """The statements that went through the driver's ``execute_async`` while the block ran."""
    session = db.session
    calls: list[object] = []
    full = session.execute_async

    def counted(statement: object, *args: Any, **kwargs: Any) -> Any:
        calls.append(statement)
        return full(statement, *args, **kwargs)

    session.execute_async = counted
    try:
        yield calls
    finally:
        del session.execute_async


@pytest.fixture
async def probe_table(loop_db: Database, base_settings: Settings) -> AsyncIterator[str]:
    table = f"{base_settings.keyspace}.direct_probe_{uuid.uuid4().hex[:8]}"
    session = loop_db.session
    await asyncio.to_thread(
        session.execute, f"CREATE TABLE {table} (k int, c int, v text, PRIMARY KEY (k, c))"
    )
    yield table
    await asyncio.to_thread(session.execute, f"DROP TABLE IF EXISTS {table}")


async def test_reads_go_the_short_way_with_the_drivers_answers(loop_db: Database, probe_table: str) -> None:
    for c in range(7):
        await loop_db.execute(f"INSERT INTO {probe_table} (k, c, v) VALUES (?, ?, ?)", (1, c, f"v{c}"))
    select = f"SELECT c, v FROM {probe_table} WHERE k = ?"
    prepared = await loop_db.prepare(select)

    with _driver_calls(loop_db) as calls:
        whole = await loop_db.execute(select, (1,))
        first = await loop_db.execute(select, (1,), fetch_size=3)
        second = await loop_db.execute(select, (1,), fetch_size=3, paging_state=first.paging_state)
        pages = [page async for page in loop_db.pages(select, (1,), fetch_size=3)]
        none = await loop_db.execute(select, (2,))
    assert calls == []  # no read went through the driver's ResponseFuture

    reference = await loop_db._run(prepared.bind((1,)))  # the driver's own way
    # The pools the fence's stream helpers are bound to (protocol v3 and later).
    assert all(isinstance(pool, HostConnection) for pool in loop_db.session.get_pools())
    assert whole.rows == reference.rows == [{"c": c, "v": f"v{c}"} for c in range(7)]
    assert whole.paging_state is None
    assert first.rows == reference.rows[:3] and first.paging_state is not None
    assert second.rows == reference.rows[3:6]
    assert [len(page) for page in pages] == [3, 3, 1]
    assert none.rows == []

    with _driver_calls(loop_db) as calls:
        await loop_db.execute(f"UPDATE {probe_table} SET v = ? WHERE k = ? AND c = ?", ("w", 1, 0))
    assert len(calls) == 1  # writes keep the driver's path


async def test_a_read_the_node_refuses_takes_the_drivers_path_and_its_error(
    loop_db: Database, probe_table: str
) -> None:
    """A node's error answer to a read goes back to the driver's full path (its retry
    policy, preparing again): the caller sees the driver's error, sent once more."""
    select = f"SELECT v FROM {probe_table} WHERE k = ? LIMIT ?"
    assert (await loop_db.execute(select, (1, 5))).rows == []
    with (
        measuring(RequestMetrics()) as metrics,
        _driver_calls(loop_db) as calls,
        pytest.raises(InvalidRequest, match="LIMIT must be strictly positive"),
    ):
        await loop_db.execute(select, (1, 0))
    assert len(calls) == 1
    assert metrics.statements == 2  # sent the short way, then the driver's


async def test_a_read_the_node_forgot_is_prepared_again_and_reads_the_new_columns(
    loop_db: Database, probe_table: str
) -> None:
    """``ALTER TABLE`` makes the node forget a ``SELECT *`` prepared before it: the short way
    hands that read to the driver, which prepares it again; the reads after it take the
    short way again, with the new columns."""
    select = f"SELECT * FROM {probe_table} WHERE k = ?"
    await loop_db.execute(f"INSERT INTO {probe_table} (k, c, v) VALUES (?, ?, ?)", (1, 1, "a"))
    assert (await loop_db.execute(select, (1,))).rows == [{"k": 1, "c": 1, "v": "a"}]
    await asyncio.to_thread(loop_db.session.execute, f"ALTER TABLE {probe_table} ADD extra text")
    await asyncio.to_thread(
        loop_db.session.execute, f"UPDATE {probe_table} SET extra = 'x' WHERE k = 1 AND c = 1"
    )
    expected = [{"k": 1, "c": 1, "v": "a", "extra": "x"}]
    with measuring(RequestMetrics()) as metrics, _driver_calls(loop_db) as calls:
        assert (await loop_db.execute(select, (1,))).rows == expected
    assert len(calls) == 1
    assert metrics.statements == 2  # the short way's, refused; the driver's, prepared again
    with _driver_calls(loop_db) as calls:
        assert (await loop_db.execute(select, (1,))).rows == expected
    assert calls == []


async def test_a_read_that_times_out_leaves_its_stream_until_the_late_answer(
    base_settings: Settings, server: object
) -> None:
    overrides: dict[str, Any] = {"request_timeout": 0.5, "cassandra_io": "loop", "direct_reads": True}
    async with _through_proxy(base_settings, **overrides) as (db, proxy):
        connections = _connections(db)
        proxy.latency = 1.5
        with pytest.raises(CassandraUnavailable, match=r"(?i)timeout"):
            await db.execute(USER, ("nobody-at-all",))
        # The stream id is not handed out again while the node may still answer on it.
        assert sum(len(c.orphaned_request_ids) for c in connections) == 1
        proxy.latency = 0.0
        for _ in range(100):  # the late answer comes after the proxy's 1.5 s
            if not sum(len(c.orphaned_request_ids) for c in connections):
                break
            await asyncio.sleep(0.1)
        assert sum(len(c.orphaned_request_ids) for c in connections) == 0  # the late answer freed it
        assert (await db.execute(USER, ("nobody-at-all",))).rows == []
        await asyncio.sleep(0.2)
        assert all(c.in_flight == 0 for c in connections)


async def test_a_direct_read_leaves_no_cycle_behind(loop_db: Database) -> None:
    await loop_db.execute(USER, ("nobody-at-all",))
    with _driver_calls(loop_db) as calls, cyclic_garbage() as garbage:
        for _ in range(50):
            await loop_db.execute(USER, ("nobody-at-all",))
    assert calls == []  # all 50 went the short way
    assert not [o for o in garbage if isinstance(o, asyncio.Future | asyncio.TimerHandle)]


async def test_a_read_no_connection_takes_now_gives_its_stream_back(loop_db: Database) -> None:
    """A connection that refuses to send (overloaded, closing): the short way hands the read to
    the driver's path, and the stream id and in-flight count it took are given back."""
    prepared = await loop_db.prepare(USER)
    await loop_db.execute(USER, ("nobody-at-all",))
    direct = loop_db._direct
    assert direct is not None
    connections = _connections(loop_db)
    before = [(len(c.request_ids), c.in_flight) for c in connections]
    for connection in connections:
        connection._socket_writable = False
    try:
        assert direct.send(prepared.bind(("nobody-at-all",)), None) is None
    finally:
        for connection in connections:
            connection._socket_writable = True
    assert [(len(c.request_ids), c.in_flight) for c in connections] == before
    assert (await loop_db.execute(USER, ("nobody-at-all",))).rows == []


async def test_with_direct_reads_off_every_statement_takes_the_drivers_path(
    base_settings: Settings, server: object
) -> None:
    """``CASSANDRA_DIRECT_READS=0``: the loop's connections, and every read through the
    driver's ``ResponseFuture``, answering what the short way answers."""
    settings = replace(base_settings, contact_points=_points(base_settings), cassandra_io="loop")
    db = Database(replace(settings, direct_reads=False))
    await db.open()
    db.use_keyspace(base_settings.keyspace)
    try:
        assert db._direct is None
        assert isinstance(_connections(db)[0], LoopConnection)
        with _driver_calls(db) as calls:
            pages = [page async for page in db.pages(TABLES, ("system_schema",), fetch_size=3)]
            assert (await db.execute(USER, ("nobody-at-all",))).rows == []
        assert len(calls) == len(pages) + 1
        whole = (await db.execute(TABLES, ("system_schema",))).rows
        assert [row for page in pages for row in page] == whole
    finally:
        await asyncio.to_thread(db.shutdown)
