"""The one Cassandra cluster/session of a process, bridged to asyncio.

- Statements are prepared once per process, on first use (in a worker thread, so
  the event loop never blocks), and cached by their CQL text.
- Rows come back as dicts (``dict_factory``), far cheaper than named tuples.
- ``execute_async`` is bridged to asyncio with ``add_callbacks``; on the loop's
  connections a SELECT goes straight to a connection (:mod:`gateway.db.direct`). The served
  gateway's connections live on its event loop (:mod:`gateway.db.loop_io`), so
  a result settles its future directly; with the driver's own I/O thread
  (``CASSANDRA_IO=thread``, the command-line tools) it goes through
  ``loop.call_soon_threadsafe``.
- The driver's "cannot answer now" errors become :class:`CassandraUnavailable`,
  which the GraphQL layer reports as ``UNAVAILABLE``.
- Every round trip is counted per request (a context variable that the GraphQL
  layer sets), so tests can assert statement counts. With tracing on, each one
  counted is also a span (:class:`StatementSpans`): its table, consistency and rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from cassandra import ConsistencyLevel, OperationTimedOut, RequestExecutionException
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import (
    EXEC_PROFILE_DEFAULT,
    Cluster,
    ExecutionProfile,
    NoHostAvailable,
    Session,
)
from cassandra.connection import Connection, ConnectionException, ConnectionShutdown
from cassandra.policies import (
    DCAwareRoundRobinPolicy,
    ExponentialReconnectionPolicy,
    TokenAwarePolicy,
)
from cassandra.protocol import ErrorMessage, IsBootstrappingErrorMessage, OverloadedErrorMessage
from cassandra.query import BatchStatement, BatchType, BoundStatement, PreparedStatement, dict_factory

from gateway.db.direct import DirectReads, is_read
from gateway.db.driver_internals import next_page_state
from gateway.db.loop_io import LoopConnection
from gateway.db.retry import GatewayRetryPolicy, all_idempotent, is_idempotent
from gateway.db.segments import ThreadConnection
from gateway.settings import Settings
from gateway.tracing import SpanKind, Tracer, failed

log = logging.getLogger(__name__)

Row = dict[str, Any]
T = TypeVar("T")


#: The table a DML statement names first: after SELECT ... FROM, INSERT INTO, UPDATE or
#: DELETE ... FROM, a name, qualified already when a keyspace and a dot precede it.
_TABLE = re.compile(
    r"^(\s*(?:SELECT\s.*?\sFROM|INSERT\s+INTO|UPDATE|DELETE(?:\s.*?)?\sFROM)\s+)"
    r"([A-Za-z_][A-Za-z0-9_]*\.)?([A-Za-z_][A-Za-z0-9_]*)(?=[\s(;]|$)",
    re.IGNORECASE | re.DOTALL,
)


def qualified(cql: str, keyspace: str) -> str | None:
    """``cql`` with its table named in ``keyspace`` (``SELECT ... FROM ks.table``), as it
    is when it names its keyspace already, or None when it names no table this way.

    The stores' CQL is keyspace-independent (the same statements serve the embedded
    node, throwaway test keyspaces and a real cluster). Prepared unqualified, with the
    keyspace sent in the PREPARE, Cassandra answers right but logs an ERROR for every
    statement each minute ("Tried to execute a prepared unqualified statement on a
    keyspace it was not prepared on"), warns that a keyspace in the query options is
    dangerous, and sends each connection advice to qualify table names. Qualified
    statements are what it asks for."""
    match = _TABLE.match(cql)
    if match is None:
        return None
    if match.group(2):
        return cql
    return f"{match.group(1)}{keyspace}.{match.group(3)}{cql[match.end() :]}"


class StatementSpans:
    """One span per CQL round trip, named and described from the statement's text once.

    Made only with tracing on; the span's attributes follow OpenTelemetry's conventions
    for databases (``db.system.name``, ``db.collection.name``, ``db.operation.name``,
    ``db.response.returned_rows``, ...), with the consistency the statement ran at."""

    def __init__(self, tracer: Tracer, settings: Settings) -> None:
        self.tracer = tracer
        self.consistency = settings.consistency
        self.serial_consistency = settings.serial_consistency
        self._described: dict[str, tuple[str, dict[str, Any]]] = {}

    def start(self, statement: Any, keyspace: str | None, batched: Sequence[str] = ()) -> Any:
        """A started span for ``statement``; ``batched``: a batch's statements' CQL."""
        if isinstance(statement, BatchStatement):
            name, attributes = self._batch(batched, keyspace)
            logged = statement.batch_type == BatchType.LOGGED
            attributes["db.cassandra.batch_type"] = "LOGGED" if logged else "UNLOGGED"
        else:
            cql = statement.prepared_statement.query_string
            described = self._described.get(cql)
            if described is None:
                described = self._described[cql] = self._describe(cql, keyspace)
            name, attributes = described
        return self.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)

    def _describe(self, cql: str, keyspace: str | None) -> tuple[str, dict[str, Any]]:
        operation = cql.split(None, 1)[0].upper() if cql.strip() else "CQL"
        match = _TABLE.match(cql)
        table = match.group(3) if match else None
        attributes: dict[str, Any] = {
            "db.system.name": "cassandra",
            "db.operation.name": operation,
            "db.query.text": cql,
            "db.cassandra.consistency_level": self.consistency,
        }
        if table is not None:
            attributes["db.collection.name"] = table
        if keyspace is not None:
            attributes["db.namespace"] = keyspace
        if re.search(r"\bIF\b", cql, re.IGNORECASE):
            attributes["db.cassandra.serial_consistency_level"] = self.serial_consistency
        return (f"{operation} {table}" if table else operation), attributes

    def _batch(self, batched: Sequence[str], keyspace: str | None) -> tuple[str, dict[str, Any]]:
        tables = sorted({match.group(3) if match else "?" for match in map(_TABLE.match, batched)})
        attributes: dict[str, Any] = {
            "db.system.name": "cassandra",
            "db.operation.name": "BATCH",
            "db.operation.batch.size": len(batched),
            "db.cassandra.consistency_level": self.consistency,
            "db.collection.name": ",".join(tables),
        }
        if keyspace is not None:
            attributes["db.namespace"] = keyspace
        return f"BATCH {','.join(tables)}", attributes


def _end_span(span: Any, rows: list[Row] | None, error: BaseException | None) -> None:
    if error is not None:
        failed(span, error)
    elif rows is not None:
        span.set_attribute("db.response.returned_rows", len(rows))
    span.end()


class CassandraUnavailable(Exception):
    """Cassandra cannot answer right now; the request may be retried later."""


class ContentionExhausted(CassandraUnavailable):
    """A compare-and-set loop lost more times than its bound allows."""


@dataclass
class RequestMetrics:
    """What one GraphQL request cost in Cassandra round trips.

    A measure taken inside another (one operation of a batched request) adds to
    its ``outer`` one as well."""

    statements: int = 0
    lwt_retries: int = 0
    outer: RequestMetrics | None = None


current_metrics: ContextVar[RequestMetrics | None] = ContextVar("current_metrics", default=None)


@contextlib.contextmanager
def measuring(metrics: RequestMetrics) -> Iterator[RequestMetrics]:
    token = current_metrics.set(metrics)
    try:
        yield metrics
    finally:
        # An operation's stream abandoned unclosed is finalised by the loop in a task of
        # its own, whose context never held the value: nothing to restore there.
        with contextlib.suppress(ValueError):
            current_metrics.reset(token)


@dataclass(frozen=True)
class Result:
    rows: list[Row]
    paging_state: bytes | None = None

    def one(self) -> Row | None:
        return self.rows[0] if self.rows else None

    @property
    def applied(self) -> bool:
        """The ``[applied]`` flag of a lightweight transaction."""
        return bool(self.rows and self.rows[0].get("[applied]"))


# Errors that mean "cannot answer now", not "the statement is wrong".
_UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (
    NoHostAvailable,
    RequestExecutionException,  # Unavailable, Read/WriteTimeout, Read/WriteFailure
    OperationTimedOut,
    OverloadedErrorMessage,
    IsBootstrappingErrorMessage,
    ConnectionException,
    OSError,
)
#: The same, answered as a bare error message: a coordinator's unexpected failure (a node
#: starting, or one missing a table it was just told of), a CDC write failure, and protocol
#: v5's "CAS write result unknown" (0x1700: the proposal reached fewer replicas than a
#: quorum, so it may or may not apply), which cassandra-driver 3.30 has no class for.
_UNAVAILABLE_CODES = frozenset({0x0000, 0x1600, 0x1700})


def unavailable(exc: BaseException) -> bool:
    """Whether a driver error means "cannot answer now" (:class:`CassandraUnavailable`)
    rather than "the statement is wrong"."""
    if isinstance(exc, _UNAVAILABLE_ERRORS):
        return True
    return isinstance(exc, ErrorMessage) and exc.code in _UNAVAILABLE_CODES


Params = Sequence[Any] | dict[str, Any] | None

#: The most keys one ``IN`` read carries. A multi-partition ``IN`` makes the
#: coordinator fan out to every replica set it names; 100 keeps that bounded
#: while a page of up to 100 items still costs a single round trip.
IN_CHUNK = 100


def chunked(items: Sequence[T], size: int = IN_CHUNK) -> list[Sequence[T]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


async def gathered(awaitables: Sequence[Awaitable[T]]) -> list[T]:
    """``asyncio.gather`` for a batch's reads: a batch of one (the usual DataLoader batch) is
    awaited as it is, without the task gather wraps it in (``bench/NOTES.md``)."""
    if len(awaitables) == 1:
        return [await awaitables[0]]
    return list(await asyncio.gather(*awaitables))


def _foreign_local_dc(cluster: Cluster, local_dc: str | None, points: list[str]) -> str | None:
    """What is wrong when the cluster's metadata knows nodes, none of them in ``local_dc``."""
    present = {host.datacenter for host in cluster.metadata.all_hosts() if host.datacenter}
    if local_dc is None or not present or local_dc in present:
        return None
    return (
        f"CASSANDRA_LOCAL_DC is {local_dc!r}, but the cluster at {points} has the datacenters "
        f"{', '.join(sorted(present))}"
    )


class Database:
    """Connection, prepared-statement cache and asyncio bridge for one keyspace."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._cluster: Cluster | None = None
        self._session: Session | None = None
        self._prepared: dict[str, PreparedStatement] = {}
        self._preparing: dict[str, asyncio.Future[PreparedStatement]] = {}
        self._in_flight: set[asyncio.Future[Any]] = set()
        #: Reads sent without the driver's ResponseFuture, when the connections are the loop's.
        self._direct: DirectReads | None = None
        #: The prepared statements that are SELECTs (told apart once, when prepared).
        self._reads: set[str] = set()
        self.keyspace: str | None = None
        #: A span per round trip when tracing is on (:attr:`tracer`); None: off.
        self._spans: StatementSpans | None = None

    @property
    def tracer(self) -> Tracer | None:
        return self._spans.tracer if self._spans is not None else None

    @tracer.setter
    def tracer(self, tracer: Tracer | None) -> None:
        self._spans = StatementSpans(tracer, self.settings) if tracer is not None else None

    # -- connecting ---------------------------------------------------------

    @property
    def statements_in_flight(self) -> int:
        """Statements sent (or being sent) and not yet answered, of every request and socket."""
        return len(self._in_flight)

    @property
    def connected(self) -> bool:
        return self._session is not None

    @property
    def session(self) -> Session:
        if self._session is None:
            raise CassandraUnavailable("not connected to Cassandra")
        return self._session

    def connect(self, connection_class: type[Connection] | None = None) -> None:
        """Open the cluster connection (blocking). Raises CassandraUnavailable.

        ``connection_class``: the driver's connections by default (libev, on a
        thread of their own, with whole segment headers: ``gateway/db/segments.py``);
        :meth:`LoopConnection.for_running_loop` serves them on the event loop that
        awaits the results."""
        connection_class = connection_class or ThreadConnection
        s = self.settings
        points = list(s.contact_points) or ["127.0.0.1"]
        policy = TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=s.local_dc))
        profile = ExecutionProfile(
            load_balancing_policy=policy,
            row_factory=dict_factory,
            request_timeout=s.request_timeout,
            consistency_level=ConsistencyLevel.name_to_value[s.consistency],
            serial_consistency_level=ConsistencyLevel.name_to_value[s.serial_consistency],
            # A statement whose answer was lost goes to the next host only if idempotent.
            retry_policy=GatewayRetryPolicy(),
        )
        auth = PlainTextAuthProvider(username=s.username, password=s.password or "") if s.username else None
        cluster = Cluster(
            contact_points=points,
            port=s.cassandra_port,
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
            auth_provider=auth,
            protocol_version=5,
            connect_timeout=s.connect_timeout,
            control_connection_timeout=s.connect_timeout,
            reconnection_policy=ExponentialReconnectionPolicy(0.5, 5.0),
            idle_heartbeat_interval=5,
            idle_heartbeat_timeout=s.request_timeout,
            connection_class=connection_class,
        )
        try:
            session = cluster.connect()
        except Exception as exc:
            cluster.shutdown()
            # With no node in CASSANDRA_LOCAL_DC the policy ignores every node: the driver's
            # "unable to connect to any servers" then means the setting, not the network.
            raise CassandraUnavailable(
                _foreign_local_dc(cluster, s.local_dc, points)
                or f"cannot connect to Cassandra at {points}: {exc}"
            ) from exc
        if problem := _foreign_local_dc(cluster, s.local_dc, points):
            cluster.shutdown()
            raise CassandraUnavailable(problem)
        self._cluster, self._session = cluster, session

    def datacenters(self) -> set[str]:
        """The datacenters of the cluster's nodes, as the driver's metadata knows them."""
        if self._cluster is None:
            return set()
        return {host.datacenter for host in self._cluster.metadata.all_hosts() if host.datacenter}

    async def open(self) -> None:
        """Connect from a worker thread, the connections served on the running event
        loop unless ``CASSANDRA_IO=thread``; there, reads go the short way unless
        ``CASSANDRA_DIRECT_READS=0``. Raises CassandraUnavailable."""
        io = LoopConnection.for_running_loop() if self.settings.cassandra_io == "loop" else None
        await asyncio.to_thread(self.connect, io)
        if io is not None and self.settings.direct_reads:
            self._direct = DirectReads(self.session, io.loop, io.loop_thread)

    def use_keyspace(self, keyspace: str) -> None:
        """Statements are prepared against ``keyspace``: their tables are qualified with
        it (:func:`qualified`), instead of a session-wide ``USE`` that Cassandra 5 warns
        about."""
        self.keyspace = keyspace
        self._prepared.clear()

    def shutdown(self) -> None:
        """Close the cluster (blocking). Statements still in flight end at once with
        CassandraUnavailable: the driver would leave them to their request timeout."""
        cluster, self._cluster, self._session = self._cluster, None, None
        self._direct = None
        self._prepared.clear()
        if cluster is not None:
            cluster.shutdown()
        closed = ConnectionShutdown("the Cassandra session was shut down")
        for future in list(self._in_flight):
            with contextlib.suppress(RuntimeError):  # its loop is closed: nobody awaits it
                future.get_loop().call_soon_threadsafe(_settle, future, None, closed)

    # -- statements ---------------------------------------------------------

    async def prepare(self, cql: str) -> PreparedStatement:
        """The prepared statement for ``cql``, preparing it once per process."""
        prepared = self._prepared.get(cql)
        if prepared is not None:
            return prepared
        pending = self._preparing.get(cql)
        if pending is None:
            loop = asyncio.get_running_loop()
            session = self.session
            keyspace = self.keyspace
            text = qualified(cql, keyspace) if keyspace is not None else None
            if text is None:  # no table to qualify (or no keyspace yet): the keyspace goes along
                prepare = functools.partial(session.prepare, cql, keyspace=keyspace)
            else:
                prepare = functools.partial(session.prepare, text)
            pending = asyncio.ensure_future(loop.run_in_executor(None, prepare))
            self._preparing[cql] = pending
        try:
            ready: PreparedStatement = await asyncio.shield(pending)
        except Exception as exc:
            if not unavailable(exc):
                raise
            raise CassandraUnavailable(str(exc) or type(exc).__name__) from exc
        finally:
            self._preparing.pop(cql, None)
        if is_read(cql):
            self._reads.add(cql)
        # Bound statements inherit it: whether the driver may send one again (``retry.py``).
        ready.is_idempotent = is_idempotent(cql)
        self._prepared[cql] = ready
        return ready

    def _count(self, *, lwt_retries: int = 0, statements: int = 1) -> None:
        request = current_metrics.get()
        while request is not None:
            request.statements += statements
            request.lwt_retries += lwt_retries
            request = request.outer

    def count_lwt_retry(self) -> None:
        self._count(statements=0, lwt_retries=1)

    async def execute(
        self,
        cql: str,
        params: Params = None,
        *,
        fetch_size: int | None = None,
        paging_state: bytes | None = None,
        timestamp: int | None = None,
    ) -> Result:
        """Run one prepared statement; returns its first page of rows. On the loop's
        connections a SELECT goes the short way (:mod:`gateway.db.direct`)."""
        prepared = self._prepared.get(cql) or await self.prepare(cql)
        bound = prepared.bind(params or ())
        if fetch_size is not None:
            bound.fetch_size = fetch_size
        if timestamp is not None:
            bound.timestamp = timestamp
        direct = self._direct
        if direct is not None and cql in self._reads and threading.get_ident() == direct.loop_thread:
            rows = await self._read(direct, bound, paging_state)
            if rows is not None:
                return Result(*rows)
            # Not rows: the driver's full path (retries, preparing again, its errors).
        return await self._run(bound, paging_state=paging_state)

    async def _read(
        self, direct: DirectReads, bound: BoundStatement, paging_state: bytes | None
    ) -> tuple[list[Row], bytes | None] | None:
        spans = self._spans
        span = spans.start(bound, self.keyspace) if spans is not None else None
        future = direct.send(bound, paging_state)
        if future is None:
            if span is not None:
                span.end()  # not sent: the full path sends it, under a span of its own
            return None
        self._count()
        if span is None:
            return await self._settled(future)
        try:
            rows = await self._settled(future)
        except BaseException as exc:
            _end_span(span, None, exc)
            raise
        _end_span(span, rows[0] if rows is not None else None, None)
        return rows

    async def _settled(self, future: asyncio.Future[T]) -> T:
        """A statement's outcome, its future among those :meth:`shutdown` ends; the driver's
        "cannot answer now" errors become :class:`CassandraUnavailable`."""
        self._in_flight.add(future)
        try:
            return await future
        except Exception as exc:
            if not unavailable(exc):
                raise
            raise CassandraUnavailable(str(exc) or type(exc).__name__) from exc
        finally:
            self._in_flight.discard(future)

    async def pages(
        self, cql: str, params: Params = None, *, fetch_size: int = 1000
    ) -> AsyncIterator[list[Row]]:
        """A statement's rows page by page, to the end (one round trip each)."""
        paging_state: bytes | None = None
        while True:
            result = await self.execute(cql, params, fetch_size=fetch_size, paging_state=paging_state)
            yield result.rows
            if result.paging_state is None:
                return
            paging_state = result.paging_state

    async def execute_all(self, cql: str, params: Params = None, *, fetch_size: int = 1000) -> list[Row]:
        """Run a statement and follow its pages to the end (one round trip each)."""
        return [row async for page in self.pages(cql, params, fetch_size=fetch_size) for row in page]

    async def select_in(self, cql: str, keys: Iterable[Any]) -> list[Row]:
        """Rows of ``cql`` whose one ``?`` is ``IN ?``, for every distinct key:
        one read per ``IN_CHUNK`` keys, the reads in flight together."""
        wanted = sorted(set(keys))
        pages = await gathered(
            [self.execute(cql, (list(chunk),), fetch_size=IN_CHUNK) for chunk in chunked(wanted)]
        )
        return [row for page in pages for row in page.rows]

    async def batch(self, statements: Sequence[tuple[str, Params]], *, logged: bool = True) -> Result:
        """Several writes in one round trip (a logged batch is applied all-or-nothing, eventually)."""
        batch = BatchStatement(batch_type=BatchType.LOGGED if logged else BatchType.UNLOGGED)
        batch.is_idempotent = all_idempotent(cql for cql, _ in statements)
        for cql, params in statements:
            prepared = await self.prepare(cql)
            batch.add(prepared, params or ())
        return await self._run(batch, batched=[cql for cql, _ in statements] if self._spans else ())

    async def _run(
        self, statement: Any, *, paging_state: bytes | None = None, batched: Sequence[str] = ()
    ) -> Result:
        """Send a statement and await its first page.

        A finished driver request can sit in reference cycles (with the driver's
        own I/O thread, its timer's; a loop connection's timer lets go) that keep
        the bound values and the rows alive until the cyclic collector runs,
        often seconds and many megabytes later (a 25 MB attachment upload kept
        most of its chunks). Once the request is settled its callbacks are
        dropped and its value and row lists emptied, so memory follows the
        caller's references only.
        """
        loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()
        future: asyncio.Future[Result] = loop.create_future()
        self._count()
        spans = self._spans
        span = spans.start(statement, self.keyspace, batched) if spans is not None else None
        try:
            response = self.session.execute_async(statement, paging_state=paging_state)
        except Exception as exc:
            if not unavailable(exc):
                raise
            if span is not None:
                _end_span(span, None, exc)
            raise CassandraUnavailable(str(exc) or type(exc).__name__) from exc

        def settle(result: Result | None, exc: BaseException | None) -> None:
            if threading.get_ident() == loop_thread:  # a loop connection's answer
                _settle(future, result, exc)
            else:
                loop.call_soon_threadsafe(_settle, future, result, exc)

        def resolve(rows: list[Row]) -> None:
            page = list(rows or ())
            if rows:
                rows.clear()  # the request's own result list
            settle(Result(page, next_page_state(response)), None)

        def reject(exc: BaseException) -> None:
            settle(None, exc)

        response.add_callbacks(resolve, reject)
        try:
            result = await self._settled(future)
        except BaseException as exc:
            if span is not None:
                _end_span(span, None, exc)
            raise
        finally:
            response.clear_callbacks()
            _release_values(statement)
        if span is not None:
            _end_span(span, result.rows, None)
        return result


def _release_values(statement: Any) -> None:
    """Empty a settled statement's bound values (the request message shares the list)."""
    if isinstance(statement, BoundStatement):
        statement.values.clear()
        statement.raw_values = ()
    elif isinstance(statement, BatchStatement):
        statement.clear()


def _settle(future: asyncio.Future[Result], result: Result | None, exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        assert result is not None
        future.set_result(result)
