"""Benchmark harness: a real gateway over the real node, load from another process.

``gateway_under_test()`` starts (or reuses) the embedded node, serves the app in
a child process (``bench/serve.py``) on a free loopback port over a throwaway
keyspace, and yields a :class:`Target`: a lean keep-alive client for GraphQL calls
(``bench/client.py``), an aiohttp session for other HTTP, and a ``Database`` of this
process, on the same keyspace, for the raw-driver baseline; both do their Cassandra
I/O as ``CASSANDRA_IO`` says, or the baseline as ``BENCH_BASELINE_IO`` says
(``thread``: the driver as it ships).
``measure()`` runs a bounded number of calls at a given concurrency and returns
requests/s, p50, p99 and CQL statements per request.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
from cassandra.cluster import Cluster

from bench.client import GraphQLClient
from bench.profile import profiling
from gateway.db.migrations import drop_keyspace
from gateway.db.session import Database, RequestMetrics, measuring
from gateway.ratelimit.policy import Limit
from gateway.settings import Settings
from gateway.settings.tooling import ToolingSettings


@dataclass
class Stats:
    name: str
    requests: int
    seconds: float
    latencies_ms: list[float]
    statements: float
    lwt_retries: float = 0.0
    gateway_cpu: float = 0.0
    local_cpu: float = 0.0
    #: CPU-seconds of the Cassandra node over the run (0 when the node is not this machine's).
    node_cpu: float = 0.0
    #: CQL requests the node served over the run, from every client.
    node_requests: int = 0
    #: Lightweight transactions per request (counted on a driver row only: :func:`counted`).
    lwts: float = 0.0
    #: Requests/s of each round, for a row added up from the rounds of :func:`side_by_side`.
    rounds_rps: list[float] = field(default_factory=list)

    @classmethod
    def added(cls, name: str, parts: list[Stats]) -> Stats:
        """One row for runs of the same case: requests, time and CPU summed, latencies pooled,
        per-request means weighted by requests."""
        requests = sum(p.requests for p in parts)

        def mean(value: Callable[[Stats], float]) -> float:
            return sum(value(p) * p.requests for p in parts) / requests if requests else 0.0

        return cls(
            name=name,
            requests=requests,
            seconds=sum(p.seconds for p in parts),
            latencies_ms=[ms for p in parts for ms in p.latencies_ms],
            statements=mean(lambda p: p.statements),
            lwt_retries=mean(lambda p: p.lwt_retries),
            gateway_cpu=sum(p.gateway_cpu for p in parts),
            local_cpu=sum(p.local_cpu for p in parts),
            node_cpu=sum(p.node_cpu for p in parts),
            node_requests=sum(p.node_requests for p in parts),
            lwts=mean(lambda p: p.lwts),
            rounds_rps=[p.rps for p in parts],
        )

    @property
    def cpu_per_1000(self) -> float:
        """CPU-seconds per 1000 requests of the process doing the work: the gateway's for a
        gateway row, this process's (driver and load generator) for a driver row."""
        cpu = self.local_cpu if self.name.startswith("driver") else self.gateway_cpu
        return cpu * 1000 / self.requests if self.requests else 0.0

    @property
    def client_cpu_per_1000(self) -> float:
        """CPU-seconds per 1000 requests of the load generator, this process, on a gateway row
        (it shares the machine with the gateway and the node); 0 on a driver row, whose load
        generator is in the driver's own process and already in its CPU column."""
        if self.name.startswith("driver") or not self.requests:
            return 0.0
        return self.local_cpu * 1000 / self.requests

    @property
    def node_cpu_per_1000(self) -> float:
        """CPU-seconds of the Cassandra node per 1000 requests (whatever else it served meanwhile
        is in it too: the node is shared)."""
        return self.node_cpu * 1000 / self.requests if self.requests else 0.0

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass
class Target:
    url: str
    http: aiohttp.ClientSession
    db: Database
    settings: Settings
    client: GraphQLClient = field(init=False)

    def __post_init__(self) -> None:
        self.client = GraphQLClient(self.url)

    async def graphql(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        _, body = await self.client.post(query, variables, token)
        if body.get("errors"):
            raise RuntimeError(f"GraphQL errors: {body['errors']}")
        return body

    async def sign_up(self, login: str) -> str:
        """A new user's bearer token."""
        body = await self.graphql(
            """mutation($input: SignUpInput!) { signUp(input: $input) { token } }""",
            {
                "input": {
                    "login": login,
                    "password": "bench-password",
                    "firstname": login.title(),
                    "lastname": "Bench",
                    "email": f"{login}@example.com",
                }
            },
        )
        return str(body["data"]["signUp"]["token"])


_servers: list[int] = []
"""Process ids of the gateways under test: their CPU time is read around each measurement."""

_node: list[int] = []
"""Process id of the local Cassandra node, when it runs on this machine: its CPU time is read
around each measurement too."""


def _process_tree_cpu(root: int) -> float:
    """User + system CPU seconds of ``root`` and its live descendants (from /proc)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total = 0.0
    for pid, cpu in times.items():
        ancestor = pid
        while ancestor > 1 and ancestor != root:
            ancestor = parents.get(ancestor, 0)
        if ancestor == root:
            total += cpu
    return total


def servers_cpu() -> float:
    return sum(_process_tree_cpu(pid) for pid in _servers)


def node_cpu() -> float:
    return sum(_process_tree_cpu(pid) for pid in _node)


_node_session: list[Any] = []
"""A session of its own on the node (the driver's I/O thread, never the benchmark's loop), to
count the CQL requests the node served around each measurement."""


def node_requests() -> int:
    """CQL requests the node has served so far, from every client (``Native-Transport-Requests``
    of ``system_views.thread_pools``): the node is shared, so its CPU over a case is divided by
    everything it served meanwhile, not by the case's statements alone. 0 when unreadable."""
    if not _node_session or not _node:
        return 0
    try:
        rows = _node_session[0].execute(
            "SELECT completed_tasks FROM system_views.thread_pools WHERE name = 'Native-Transport-Requests'"
        )
        return sum(int(row.completed_tasks) for row in rows)
    except Exception:  # a cluster that hides its virtual tables
        return 0


@contextmanager
def serving(pid: int) -> Iterator[None]:
    """Count ``pid`` (and its children) as the gateway in the CPU columns."""
    _servers.append(pid)
    try:
        yield
    finally:
        _servers.remove(pid)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def gateway_under_test(**overrides: Any) -> AsyncIterator[Target]:
    overrides = {
        "keyspace": f"bench_{uuid.uuid4().hex[:10]}",
        "query_metrics": True,
        "argon2_time_cost": 1,
        "argon2_memory_cost_kib": 8192,
        "argon2_parallelism": 1,
        # Benchmarks drive thousands of requests per user and address: limits stay on (their
        # cost is measured) but are never reached.
        **{limit.value: "1000000/s" for limit in Limit},
        # Its own keyspace, so any pepper does (a real cluster refuses the public default).
        "contacts_identity_pepper": os.environ.get("GATEWAY_CONTACTS_IDENTITY_PEPPER")
        or "bench-pepper-" + "p" * 32,
        # A real cluster needs a sender of verification codes; the benchmarks ask for none.
        "verification_webhook_url": os.environ.get("GATEWAY_VERIFICATION_WEBHOOK_URL")
        or "http://127.0.0.1:9/codes",
        "password_queue": 100000,
        "port": _free_port(),
        **overrides,
    }
    settings = replace(Settings.from_env(), **overrides)
    if settings.embedded:
        from devnode.cassandra import CassandraNode

        node = CassandraNode(ToolingSettings.from_env(), settings.cassandra_port)
        await asyncio.to_thread(node.start)
        node_pid = node.status().pid
        _node[:] = [node_pid] if node_pid else []
        counter = Cluster([node.host], port=settings.cassandra_port, protocol_version=5)
        _node_session[:] = [await asyncio.to_thread(counter.connect)]
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.serve", json.dumps(overrides, default=str)
    )
    db = Database(replace(settings, cassandra_io=baseline_io(settings)))
    count_lwts(db)
    connector = aiohttp.TCPConnector(limit=256)
    try:
        with serving(server.pid):
            async with aiohttp.ClientSession(connector=connector) as http:
                base = f"http://127.0.0.1:{settings.port}"
                await _wait_ready(http, base, server)
                await db.open()
                db.use_keyspace(settings.keyspace)
                target = Target(f"{base}/graphql", http, db, settings)
                try:
                    yield target
                finally:
                    target.client.close()
    finally:
        server.terminate()
        await server.wait()
        if db.connected:
            await asyncio.to_thread(drop_keyspace, db, settings.keyspace)
            await asyncio.to_thread(db.shutdown)
        if _node_session:
            await asyncio.to_thread(_node_session.pop().cluster.shutdown)


@asynccontextmanager
async def floor_under_test(target: Target) -> AsyncIterator[GraphQLClient]:
    """``bench.floor`` on ``target``'s keyspace and settings, in a process of its own counted
    as a server: rows named ``floor:`` measure HTTP and the stores without GraphQL, beside the
    gateway doing the same reads (``python -m bench.summary`` lists them as floors)."""
    settings = target.settings
    port = _free_port()
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.floor",
        "--port",
        str(port),
        "--keyspace",
        settings.keyspace,
        "--metrics",
    )
    client = GraphQLClient(f"http://127.0.0.1:{port}/graphql")
    try:
        with serving(server.pid):
            await _wait_ready(target.http, f"http://127.0.0.1:{port}", server)
            yield client
    finally:
        client.close()
        server.terminate()
        await server.wait()


async def floor_read(
    client: GraphQLClient, query: str, variables: dict[str, Any] | None = None, token: str | None = None
) -> dict[str, Any]:
    """One read of the floor server: its body, with ``extensions.cql`` for the statement column."""
    status, body = await client.post(query, variables, token)
    if status != 200 or "data" not in body:
        raise RuntimeError(f"the floor answered {status}: {body}")
    return body


def baseline_io(settings: Settings) -> str:
    """Where the raw-driver baseline does its Cassandra I/O: ``BENCH_BASELINE_IO``, or as the gateway."""
    io = os.environ.get("BENCH_BASELINE_IO") or settings.cassandra_io
    if io not in ("loop", "thread"):
        raise SystemExit(f"BENCH_BASELINE_IO must be 'loop' or 'thread', got {io!r}")
    return io


async def _wait_ready(http: aiohttp.ClientSession, base: str, server: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.returncode is not None:
            raise RuntimeError("the server under test exited")
        try:
            async with http.get(f"{base}/readyz") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.3)
    raise RuntimeError("the server under test did not become ready")


async def in_parallel(
    count: int, work: Callable[[int], Awaitable[object]], concurrency: int, *, first: int = 0
) -> None:
    """``work(first) .. work(first + count - 1)``, ``concurrency`` at a time."""
    next_index = first
    end = first + count

    async def worker() -> None:
        nonlocal next_index
        while next_index < end:
            index = next_index
            next_index += 1
            await work(index)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


Call = Callable[[int], Awaitable[dict[str, Any] | RequestMetrics | None]]


async def measure(name: str, call: Call, *, requests: int, concurrency: int, warmup: int = 20) -> Stats:
    """Run ``call(i)`` ``requests`` times, ``concurrency`` at once.

    ``call`` returns a GraphQL response body (its ``extensions.cql`` is read) or a
    ``RequestMetrics`` (for raw-driver baselines measured with :func:`counted`).
    """
    for i in range(warmup):
        await call(-1 - i)
    return await _timed_run(name, call, requests, concurrency, first=0)


ROUNDS = 4
"""Rounds of :func:`side_by_side`: each case runs a quarter of its requests per round."""


async def side_by_side(
    *cases: tuple[str, Call], requests: int, concurrency: int, warmup: int = 20, rounds: int = ROUNDS
) -> list[Stats]:
    """Measure cases that are compared with each other (a gateway case and its driver baseline)
    in alternating rounds rather than one after the other.

    The machine does not stay the same over a minute: the node compacts and flushes what the
    seeding wrote, and other processes come and go. Measured one after the other, whichever case
    runs in a quiet stretch looks faster. Here each case runs ``requests / rounds`` calls per
    round, the order of the cases rotating from round to round, so each meets the same
    stretches; its row adds up its rounds (requests/s over its own time, p50/p99 over all of
    its calls, CPU summed). Call indexes run on across rounds: writes stay unique. With
    ``BENCH_PROFILE`` set, one round: each case's profile is one unbroken run.
    """
    if os.environ.get("BENCH_PROFILE"):
        rounds = 1
    for _, call in cases:
        for i in range(warmup):
            await call(-1 - i)
    per_round = [requests // rounds + (1 if r < requests % rounds else 0) for r in range(rounds)]
    parts: list[list[Stats]] = [[] for _ in cases]
    for r, count in enumerate(per_round):
        first = sum(per_round[:r])
        for k in range(len(cases)):
            position = (k + r) % len(cases)
            name, call = cases[position]
            parts[position].append(await _timed_run(name, call, count, concurrency, first=first))
    return [Stats.added(name, part) for (name, _), part in zip(cases, parts, strict=True)]


async def _timed_run(name: str, call: Call, requests: int, concurrency: int, *, first: int) -> Stats:
    latencies: list[float] = []
    statements: list[int] = []
    retries: list[int] = []
    lwts: list[int] = []

    async def timed(index: int) -> None:
        started = time.perf_counter()
        outcome = await call(index)
        latencies.append((time.perf_counter() - started) * 1000)
        if isinstance(outcome, RequestMetrics):
            statements.append(outcome.statements)
            retries.append(outcome.lwt_retries)
            lwts.append(getattr(outcome, "lwts", 0))
        elif isinstance(outcome, dict) and "extensions" in outcome:
            cql = outcome["extensions"]["cql"]
            statements.append(cql["statements"])
            retries.append(cql["lwtRetries"])

    gateway_cpu = servers_cpu()
    served = node_requests()
    cassandra_cpu = node_cpu()
    local_cpu = time.process_time()
    started = time.perf_counter()
    with profiling(_servers[0] if _servers and name.startswith("gateway") else None, name):
        await in_parallel(requests, timed, concurrency, first=first)
    elapsed = time.perf_counter() - started
    local_cpu = time.process_time() - local_cpu
    gateway_cpu = servers_cpu() - gateway_cpu
    cassandra_cpu = node_cpu() - cassandra_cpu
    served = node_requests() - served if served else 0
    return Stats(
        name=name,
        requests=requests,
        seconds=elapsed,
        latencies_ms=latencies,
        statements=statistics.fmean(statements) if statements else 0.0,
        lwt_retries=statistics.fmean(retries) if retries else 0.0,
        gateway_cpu=gateway_cpu,
        local_cpu=local_cpu,
        node_cpu=cassandra_cpu,
        node_requests=served,
        lwts=statistics.fmean(lwts) if lwts else 0.0,
    )


@dataclass
class CountedMetrics(RequestMetrics):
    """A raw-driver request's statements, with its lightweight transactions counted too."""

    lwts: int = 0


_CONDITION = re.compile(r"\bIF\s+(NOT\s+EXISTS|EXISTS|\w+\s*(=|<|>|!=|IN\b))", re.IGNORECASE)
"""A conditional statement's ``IF`` clause: a lightweight transaction (Paxos), not a plain write."""


def is_lwt(cql: str) -> bool:
    return not cql.lstrip().upper().startswith("SELECT") and _CONDITION.search(cql) is not None


_lwts: ContextVar[CountedMetrics | None] = ContextVar("bench_lwts", default=None)


def count_lwts(db: Database) -> None:
    """Make the baseline's ``db`` count the lightweight transactions it sends into the
    :class:`CountedMetrics` of :func:`counted` (its ``execute`` and ``batch``, wrapped on this
    instance only; the gateway under test is another process and is not touched)."""
    execute, batch = db.execute, db.batch

    async def counting_execute(cql: str, *args: Any, **kwargs: Any) -> Any:
        metrics = _lwts.get()
        if metrics is not None and is_lwt(cql):
            metrics.lwts += 1
        return await execute(cql, *args, **kwargs)

    async def counting_batch(statements: Any, *args: Any, **kwargs: Any) -> Any:
        metrics = _lwts.get()
        if metrics is not None and any(is_lwt(cql) for cql, _ in statements):
            metrics.lwts += 1  # a conditional batch is one Paxos round, whatever it holds
        return await batch(statements, *args, **kwargs)

    db.execute = counting_execute  # type: ignore[method-assign]
    db.batch = counting_batch  # type: ignore[method-assign]


async def counted(work: Awaitable[Any]) -> RequestMetrics:
    """Run raw-driver work and return the statements (and lightweight transactions) it issued."""
    metrics = CountedMetrics()
    token = _lwts.set(metrics)
    try:
        with measuring(metrics):
            await work
    finally:
        _lwts.reset(token)
    return metrics


def report(title: str, rows: list[Stats]) -> None:
    """Print the table; with ``BENCH_SUMMARY`` set, also append the rows to that JSON-lines file
    (``python -m bench.summary`` pairs them up)."""
    print(f"\n## {title}")
    print(
        f"{'case':<44} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CQL/req':>8} {'LWT retry/req':>14}"
        f" {'CPU s/1000':>10} {'client CPU':>10}"
    )
    for row in rows:
        client = f"{row.client_cpu_per_1000:.2f}" if row.client_cpu_per_1000 else ""
        print(
            f"{row.name:<44} {row.rps:>9.0f} {row.pct(0.50):>8.2f} {row.pct(0.99):>8.2f}"
            f" {row.statements:>8.2f} {row.lwt_retries:>14.3f} {row.cpu_per_1000:>10.2f}"
            f" {client:>10}"
        )
    summary = os.environ.get("BENCH_SUMMARY")
    if summary:
        with open(summary, "a") as out:
            for row in rows:
                out.write(json.dumps({
                    "report": title, "name": row.name, "rps": row.rps, "p99": row.pct(0.99),
                    "statements": row.statements, "cpu_per_1000": row.cpu_per_1000,
                    "client_cpu_per_1000": row.client_cpu_per_1000, "rounds_rps": row.rounds_rps,
                    "requests": row.requests, "lwts": row.lwts, "lwt_retries": row.lwt_retries,
                    "node_cpu_per_1000": row.node_cpu_per_1000, "node_cpu": row.node_cpu,
                    "node_requests": row.node_requests,
                }) + "\n")  # fmt: skip
