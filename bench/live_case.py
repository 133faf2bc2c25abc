"""One case of the delivery benchmark, from fresh gateway processes to its numbers.

:func:`run_case` starts ``gateway serve --workers N`` on a free port, then, in order:

1. warms it (the sender's connections, one message from every sender) and measures what
   one send costs the node, with no socket open: ``CALIBRATION_SENDS`` sends;
2. reads the gateway's RSS, opens the sockets in their load processes (``bench/live_load.py``)
   and sends probe messages until every socket has received one: every subscription is live
   on the process that holds it, through the broker when there is one;
3. idles ``SETTLE_SECONDS`` (what the node does meanwhile is the background subtracted
   below) and reads the RSS again;
4. counts: ``COUNTED_ROUNDS`` rounds of one probe to every socket, each awaited until every
   socket has it, between two reads of the gateway's ``/metrics`` and of the node's counts
   for the keyspace. Every send of a round has answered and every delivery has arrived
   when the counts are read, so the statements per delivery are exact, whatever the load;
5. measures: the open-loop sends of the case, then the wait for stragglers, between two
   reads of the CPU of every process involved;
6. reads the arrivals the load processes recorded and closes everything.

``bench/bench_live.py`` describes the columns and prints them.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.bench_workers import METRICS_TOKEN, _ready_workers
from bench.bench_workers import _env as gateway_env
from bench.client import GraphQLClient, HttpError
from bench.harness import _free_port, _process_tree_cpu
from bench.live_load import read_dump
from bench.live_world import Case, Plan, World, plan
from bench.profile import profiling
from gateway.ratelimit.policy import Limit
from gateway.settings import Settings
from gateway.settings.declare import declared

#: Sends made to measure what one send costs the node, before the sockets connect.
CALIBRATION_SENDS = 20
#: Seconds the gateway idles with every socket subscribed before it is measured: its RSS is
#: read, and what it asks of the node meanwhile is its background.
SETTLE_SECONDS = 2.0
#: A probe is sent again when no socket received it for this long (a subscription that was
#: not live yet never will); at most this many probes.
PROBE_PATIENCE = 2.0
PROBE_ROUNDS = 30
#: Rounds of one message to every socket over which statements per delivery are counted, and
#: how long a round may go without a new arrival before the count gives up on it.
COUNTED_ROUNDS = 2
COUNT_PATIENCE = 30.0
#: How often the arrivals are counted while waiting for them.
POLL_SECONDS = 0.1
#: Sockets from which the subscribers are split over two load processes by default.
TWO_LOAD_PROCESSES_FROM = 500
#: Connections the sender opens before sending (sends in flight beyond that open more).
SENDER_CONNECTIONS = 8

#: What ``/metrics`` counts of CQL and deliveries: statements of queries and mutations, and
#: (since the live hub) subscription results written to sockets and the statements run for them.
CQL_STATEMENTS = "gateway_cql_statements"
DELIVERIES = "gateway_subscription_deliveries"
DELIVERY_STATEMENTS = "gateway_subscription_delivery_cql_statements"
COUNTERS = (CQL_STATEMENTS, DELIVERIES, DELIVERY_STATEMENTS)

_TICK = os.sysconf("SC_CLK_TCK")
_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


@dataclass
class Sent:
    seq: int
    scheduled: float
    sent: float = 0.0
    answered: float = 0.0
    ok: bool = False
    statements: int = 0
    error: str = ""


@dataclass
class Resources:
    """CPU-seconds so far of everything involved, read at one moment."""

    at: float
    gateway: float
    sockets: float
    sender: float
    node: float
    redis: float
    machine: float


@dataclass
class Outcome:
    case: Case
    sent: int = 0
    failed_sends: int = 0
    expected: int = 0
    received: int = 0
    duplicates: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    send_ms: list[float] = field(default_factory=list)
    sender_late_ms: float = 0.0
    #: From the first send to the last arrival.
    seconds: float = 0.0
    #: CPU-seconds over the measured window (the sends and the wait for stragglers), and
    #: (``at``) its length.
    cpu: Resources = field(default_factory=lambda: Resources(0, 0, 0, 0, 0, 0, 0))
    #: Deliveries of the counted rounds, and what the gateway's counter and the node counted
    #: for them (the node's by kind and table, the sends' and the background's share taken off).
    counted_deliveries: int = 0
    cql_counter_added: float | None = None
    delivery_statements: float | None = None
    node_tables: dict[str, float] = field(default_factory=dict)
    node_counted: bool = False
    rss_before_kib: int = 0
    rss_idle_kib: int = 0
    rss_after_kib: int = 0
    load_processes: int = 1
    #: Cores the gateway processes kept busy over an idle window with every socket open, if measured.
    idle_cores: float | None = None
    #: The machine's 1-minute load average when the case started (other work shares it).
    load_average: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return self.expected - self.received

    def pct(self, q: float) -> float:
        return _pct(self.latencies_ms, q)

    @property
    def send_p99(self) -> float:
        return _pct(self.send_ms, 0.99)

    @property
    def deliveries_per_second(self) -> float:
        return self.received / self.seconds if self.seconds else 0.0

    def per_1000(self, cpu: float) -> float:
        return cpu * 1000 / self.received if self.received else float("nan")

    @property
    def window(self) -> float:
        """Seconds from the first send to the end of the wait for stragglers."""
        return self.cpu.at

    def cores(self, cpu: float) -> float:
        return cpu / self.window if self.window else 0.0

    @property
    def node_requests(self) -> float | None:
        """Requests the node coordinated for the keyspace per delivery (None: not readable)."""
        return sum(self.node_tables.values()) if self.node_counted else None

    @property
    def cql_per_delivery(self) -> str:
        """What ``/metrics`` counted per delivery: the delivery counter's statements where the
        gateway has one (plus any the query-and-mutation counter took beyond the sends');
        without it, "not counted" where ``gateway_cql_statements`` took none of the statements
        the node saw the deliveries make."""
        if self.cql_counter_added is None or not self.counted_deliveries:
            return "n/a"
        if self.delivery_statements is not None:
            return f"{(self.delivery_statements + self.cql_counter_added) / self.counted_deliveries:.3f}"
        node = self.node_requests
        if self.cql_counter_added == 0 and (node is None or node >= 0.05):
            return "not counted"
        return f"{self.cql_counter_added / self.counted_deliveries:.3f}"

    @property
    def rss_per_socket_kib(self) -> float:
        return (self.rss_idle_kib - self.rss_before_kib) / self.case.sockets


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


# -- the processes ---------------------------------------------------------------------------


class LoadProcess:
    """A ``bench.live_load`` child and its line protocol."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, config: dict[str, Any]) -> LoadProcess:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.live_load",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 24,
        )  # fmt: skip
        load = cls(process)
        await load._write(config)
        return load

    async def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(orjson.dumps(message) + b"\n")
        await self.process.stdin.drain()

    async def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"load process {self.process.pid} exited")
        answer: dict[str, Any] = orjson.loads(line)
        return answer

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        await self._write(message)
        return await self.read()

    @property
    def cpu(self) -> float:
        return _process_tree_cpu(self.process.pid)

    async def close(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(RuntimeError, ConnectionError):
                await asyncio.wait_for(self.ask({"cmd": "close"}), 10)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), 10)
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


async def _statuses(loads: list[LoadProcess], probe: int = 0) -> list[dict[str, Any]]:
    return [await load.ask({"cmd": "status", "probe": probe}) for load in loads]


@dataclass
class Gateway:
    pid: int
    base: str
    http: aiohttp.ClientSession
    client: GraphQLClient
    #: The errors the gateway logged, once it exited (its log goes to a file, not the report).
    errors: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    async def counters(self) -> dict[str, float]:
        """The ``/metrics`` counters of :data:`COUNTERS` the gateway has (every worker's, in
        multiprocess mode)."""
        headers = {"Authorization": f"Bearer {METRICS_TOKEN}"}
        async with self.http.get(f"{self.base}/metrics", headers=headers) as response:
            text = await response.text()
        found = {}
        for name in COUNTERS:
            match = re.search(rf"^{name}_total ([0-9.e+]+)$", text, re.MULTILINE)
            if match:
                found[name] = float(match.group(1))
        return found

    @property
    def rss_kib(self) -> int:
        return sum(_rss_kib(pid) for pid in _tree(self.pid))

    @property
    def worker_pids(self) -> list[int]:
        """The serving processes: itself, or the workers its supervisor started."""
        children = [pid for pid in _tree(self.pid) if pid != self.pid]
        return sorted(children) or [self.pid]


def _limits_env() -> dict[str, str]:
    """Every rate limit on (its cost is measured) but out of reach of the benchmark's senders,
    and room for every socket of the benchmark's one client address."""
    variables = {item.name: spec.variable for item, spec in declared(Settings)}
    return {
        **{variables[limit.value]: "1000000/s" for limit in Limit},
        variables["max_sockets_per_address"]: "100000",
    }


@contextlib.asynccontextmanager
async def gateway(
    world: World, workers: int, settings_env: dict[str, str] | None = None
) -> AsyncIterator[Gateway]:
    """``gateway serve --workers N`` as an operator runs it, on a free port; 2 or more with
    the run's broker; ``settings_env`` sets more of its variables. Its log goes to a file; the
    kinds of error in it end up in ``errors``."""
    port = _free_port()
    broker = world.broker_url if workers > 1 else ""
    env = {
        **gateway_env(world.settings, port, broker),
        **_limits_env(),
        "GATEWAY_DRAIN_SECONDS": "2",
        # The contacts fan-out worker's look for orphaned jobs reads a table every few seconds,
        # nothing a delivery does; once in ten minutes it stays out of the node's counts.
        "GATEWAY_CONTACTS_FANOUT_POLL_SECONDS": "600",
        **(settings_env or {}),
    }
    log = tempfile.TemporaryFile()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "serve", "--workers", str(workers), env=env, stdout=log, stderr=log
    )
    base = f"http://127.0.0.1:{port}"
    client = GraphQLClient(f"{base}/graphql")
    under_test: Gateway | None = None
    try:
        async with aiohttp.ClientSession() as http:
            await _ready_workers(http, base, workers)
            under_test = Gateway(process.pid, base, http, client)
            yield under_test
    finally:
        client.close()
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
            await process.wait()
        log.seek(0)
        errors = _logged_errors(log.read().decode(errors="replace"))
        log.close()
        if under_test is not None:
            under_test.errors = errors
        elif errors:
            print("\n".join(errors), file=sys.stderr)


def _logged_errors(log: str) -> list[str]:
    """One line per kind of error the gateway logged, with how many times."""
    kinds: dict[str, int] = {}
    for line in log.splitlines():
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(record, dict) or record.get("level") not in ("ERROR", "CRITICAL"):
            continue
        exception = str(record.get("exception") or "").strip().splitlines()
        kind = f"{record.get('logger')}: {record.get('message')}" + (
            f" ({exception[-1]})" if exception else ""
        )
        kinds[kind] = kinds.get(kind, 0) + 1
    return [f"{count} x {kind}" for kind, count in kinds.items()]


# -- sending -----------------------------------------------------------------------------------


async def _send(gw: Gateway, plan_: Plan, number: int, content: str, record: Sent | None = None) -> Sent:
    token, query, variables = plan_.send(number, content)
    sent = record or Sent(seq=-1, scheduled=time.monotonic())
    sent.sent = time.monotonic()
    try:
        _, body = await gw.client.post(query, variables, token)
    except (HttpError, OSError) as error:
        sent.error = str(error)
        return sent
    sent.answered = time.monotonic()
    if body.get("errors"):
        sent.error = str(body["errors"])[:300]
    else:
        sent.ok = True
    sent.statements = int(((body.get("extensions") or {}).get("cql") or {}).get("statements") or 0)
    return sent


async def _to_every_socket(gw: Gateway, plan_: Plan, case: Case, content: str) -> list[Sent]:
    """One message to every socket: one post to the room, or one message from every pair's sender."""
    sends = await asyncio.gather(*(_send(gw, plan_, t, content) for t in range(case.targets)))
    failed = [s.error for s in sends if not s.ok]
    if failed:
        raise RuntimeError(f"a message was refused: {failed[0]}")
    return list(sends)


async def _await_probe(loads: list[LoadProcess], probe: int, sockets: int, patience: float) -> int:
    """Until every socket has seen probe ``probe`` or a later one, or none has for ``patience``
    seconds; how many have."""
    best, since = -1, time.monotonic()
    while True:
        seen = sum(s["probed"] for s in await _statuses(loads, probe))
        if seen == sockets:
            return seen
        now = time.monotonic()
        if seen > best:
            best, since = seen, now
        elif now - since > patience:
            return seen
        await asyncio.sleep(POLL_SECONDS)


class _Probes:
    """Probe numbers, rising over a case."""

    def __init__(self) -> None:
        self.next = 0

    def take(self) -> int:
        self.next += 1
        return self.next - 1


async def _until_live(gw: Gateway, plan_: Plan, case: Case, loads: list[LoadProcess], probes: _Probes) -> int:
    """Probes until every socket has received one (its subscription is live on the process that
    holds it, and the broker reaches that process); how many probes it took. A socket that has
    the last probe had every earlier one first (a subscription's events keep their order), so
    nothing of the probing is still on its way after."""
    for attempt in range(PROBE_ROUNDS):
        probe = probes.take()
        await _to_every_socket(gw, plan_, case, f"probe={probe};")
        if await _await_probe(loads, probe, case.sockets, PROBE_PATIENCE) == case.sockets:
            return attempt + 1
    statuses = await _statuses(loads, probes.next - 1)
    ended = [e for s in statuses for e in s["ended"]]
    live = sum(s["probed"] for s in statuses)
    raise RuntimeError(f"only {live} of {case.sockets} subscriptions received a probe; ended: {ended}")


async def _send_on_schedule(
    gw: Gateway, plan_: Plan, first_seq: int, count: int, rate: float, grace: float
) -> list[Sent]:
    """``count`` sends, the i-th at ``start + i / rate`` whatever the earlier ones are doing;
    each answer awaited at most until ``grace`` after the last send."""
    start = time.monotonic() + 0.05
    records = [Sent(seq=first_seq + i, scheduled=start + i / rate) for i in range(count)]
    tasks: list[asyncio.Task[Sent]] = []
    for i, record in enumerate(records):
        delay = record.scheduled - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(_send(gw, plan_, i, f"seq={record.seq};", record)))
    _, pending = await asyncio.wait(tasks, timeout=grace)
    for task in pending:
        task.cancel()
    for record, task in zip(records, tasks, strict=True):
        if task in pending:
            record.error = f"no answer within {grace:g} s of the last send"
    return records


# -- the node's counts ------------------------------------------------------------------------


async def _node_counts(world: World) -> dict[str, int]:
    """Requests the node coordinated for the keyspace so far, by kind and table."""

    def read() -> dict[str, int]:
        counts: dict[str, int] = {}
        for kind in ("read", "scan", "write"):
            rows = world.db.session.execute(
                f"SELECT table_name, count FROM system_views.coordinator_{kind}_latency"
                " WHERE keyspace_name = %s",
                (world.settings.keyspace,),
            )
            for row in rows:
                if row["count"]:
                    counts[f"{kind} {row['table_name']}"] = int(row["count"])
        return counts

    try:
        return await asyncio.to_thread(read)
    except Exception:  # a cluster older than 4.1, or one that hides its virtual tables
        return {}


def _difference(after: dict[str, int], before: dict[str, int]) -> dict[str, float]:
    return {key: float(after[key] - before.get(key, 0)) for key in after if after[key] != before.get(key, 0)}


# -- a case ------------------------------------------------------------------------------------


_seq = 0


def _next_seq(count: int) -> int:
    """The first of ``count`` sequence numbers no other case of this run uses."""
    global _seq
    first, _seq = _seq, _seq + count
    return first


async def run_case(
    world: World,
    case: Case,
    *,
    duration: float,
    grace: float,
    load_processes: int | None = None,
    settings_env: dict[str, str] | None = None,
    idle_seconds: float = 0.0,
) -> Outcome:
    """One case, on gateway processes of its own (the module's docstring lists the steps);
    ``settings_env`` sets more of the gateway's variables; with ``idle_seconds`` the gateway's
    CPU is read over that long with every socket open and nothing sent."""
    outcome = Outcome(case, load_average=float(load_average().split()[0]))
    plan_ = plan(world, case)
    count = max(1, round(case.rate * duration))
    first_seq = _next_seq(count)
    probes = _Probes()
    async with gateway(world, case.workers, settings_env) as gw:
        await asyncio.gather(*(gw.client.post("{ __typename }") for _ in range(SENDER_CONNECTIONS)))
        await _to_every_socket(gw, plan_, case, "warm-up")
        node_before = await _node_counts(world)
        calibration = math.ceil(CALIBRATION_SENDS / case.targets)
        for _ in range(calibration):
            await _to_every_socket(gw, plan_, case, "calibration")
        per_send = {
            k: v / (calibration * case.targets)
            for k, v in _difference(await _node_counts(world), node_before).items()
        }
        outcome.rss_before_kib = gw.rss_kib

        processes = load_processes or (2 if case.sockets >= TWO_LOAD_PROCESSES_FROM else 1)
        outcome.load_processes = processes = max(1, min(processes, case.sockets))
        opening = time.monotonic()
        loads = [
            await LoadProcess.start({
                "host": "127.0.0.1", "port": gw.port, "path": "/graphql",
                "subscription": plan_.subscription, "sockets": plan_.sockets[p::processes],
                "concurrency": 50,
            })
            for p in range(processes)
        ]  # fmt: skip
        try:
            opened = [await load.read() for load in loads]
            if sum(o["subscribed"] for o in opened) != case.sockets:
                raise RuntimeError(f"not every socket subscribed: {[f for o in opened for f in o['failed']]}")
            subscribed = time.monotonic() - opening
            attempts = await _until_live(gw, plan_, case, loads, probes)
            print(
                f"  {case.sockets} sockets subscribed in {subscribed:.1f} s, live after {attempts} probe(s)",
                flush=True,
            )
            idle_before, idle_started = await _node_counts(world), time.monotonic()
            await asyncio.sleep(SETTLE_SECONDS)
            background = _difference(await _node_counts(world), idle_before)
            background_rate = {k: v / (time.monotonic() - idle_started) for k, v in background.items()}
            outcome.rss_idle_kib = gw.rss_kib
            if idle_seconds:
                idle_cpu, idle_from = _process_tree_cpu(gw.pid), time.monotonic()
                await asyncio.sleep(idle_seconds)
                outcome.idle_cores = (_process_tree_cpu(gw.pid) - idle_cpu) / (time.monotonic() - idle_from)

            await _count(gw, plan_, case, loads, probes, world, per_send, background_rate, outcome)

            before = await _resources(gw, loads, world)
            # With BENCH_PROFILE, py-spy samples the (first) serving process meanwhile.
            with profiling(gw.worker_pids[0], case.label):
                sends = await _send_on_schedule(gw, plan_, first_seq, count, case.rate, grace)
                last_send = max((s.sent for s in sends), default=time.monotonic())
                while time.monotonic() < last_send + grace:
                    if sum(s["received"] for s in await _statuses(loads)) >= count * case.fan_out:
                        break
                    await asyncio.sleep(POLL_SECONDS)
                after = await _resources(gw, loads, world)
            outcome.rss_after_kib = gw.rss_kib

            rows = []
            with tempfile.TemporaryDirectory(prefix="bench-live-") as directory:
                for p, load in enumerate(loads):
                    path = str(Path(directory) / f"arrivals-{p}")
                    await load.ask({"cmd": "dump", "path": path})
                    rows.append(read_dump(path))
            statuses = await _statuses(loads)
        finally:
            for load in loads:
                await load.close()

    outcome.notes.extend(f"gateway logged {e}" for e in gw.errors)
    for status in statuses:
        outcome.notes.extend(f"socket ended: {e}" for e in status["ended"])
        outcome.notes.extend(f"unexpected frame: {u}" for u in status["unexpected"])
    _tally(outcome, sends, rows, after.at)
    outcome.cpu = Resources(*(a - b for a, b in zip(astuple(after), astuple(before), strict=True)))
    return outcome


async def _count(
    gw: Gateway,
    plan_: Plan,
    case: Case,
    loads: list[LoadProcess],
    probes: _Probes,
    world: World,
    per_send: dict[str, float],
    background_rate: dict[str, float],
    outcome: Outcome,
) -> None:
    """Statements per delivery over ``COUNTED_ROUNDS`` messages to every socket, each
    delivered everywhere before the next: the gateway's counter less what the sends reported,
    the node's counts less the sends' (``per_send``) and the background's share."""
    counters_before, node_before, started = await gw.counters(), await _node_counts(world), time.monotonic()
    sends: list[Sent] = []
    delivered = 0
    for _ in range(COUNTED_ROUNDS):
        probe = probes.take()
        sends += await _to_every_socket(gw, plan_, case, f"probe={probe};")
        delivered += await _await_probe(loads, probe, case.sockets, COUNT_PATIENCE)
    counters_after, node_after, seconds = await gw.counters(), await _node_counts(world), time.monotonic()
    seconds -= started
    if delivered < COUNTED_ROUNDS * case.sockets:
        outcome.notes.append(
            f"counting: {delivered} of {COUNTED_ROUNDS * case.sockets} deliveries arrived "
            f"(none for {COUNT_PATIENCE:g} s)"
        )
    outcome.counted_deliveries = delivered
    added = {k: v - counters_before.get(k, 0.0) for k, v in counters_after.items()}
    if CQL_STATEMENTS in added:
        outcome.cql_counter_added = added[CQL_STATEMENTS] - sum(s.statements for s in sends)
    outcome.delivery_statements = added.get(DELIVERY_STATEMENTS)
    if DELIVERIES in added and added[DELIVERIES] != delivered:
        outcome.notes.append(
            f"counting: /metrics counted {added[DELIVERIES]:.0f} deliveries, {delivered} arrived"
        )
    outcome.node_counted = bool(node_after)
    if node_after and delivered:
        during = _difference(node_after, node_before)
        shares = {
            key: during.get(key, 0.0)
            - per_send.get(key, 0.0) * len(sends)
            - background_rate.get(key, 0.0) * seconds
            for key in {*during, *per_send, *background_rate}
        }
        outcome.node_tables = {
            k: v / delivered for k, v in sorted(shares.items()) if abs(v) / delivered >= 0.0005
        }


async def _resources(gw: Gateway, loads: list[LoadProcess], world: World) -> Resources:
    return Resources(
        at=time.monotonic(),
        gateway=_process_tree_cpu(gw.pid),
        sockets=sum(load.cpu for load in loads),
        sender=time.process_time(),
        node=_process_tree_cpu(world.node_pid) if world.node_pid else 0.0,
        redis=_process_tree_cpu(world.redis_pid) if world.redis_pid else 0.0,
        machine=_machine_busy(),
    )


def _tally(outcome: Outcome, sends: list[Sent], rows: list[Any], cutoff: float) -> None:
    """Deliveries expected and received, latencies, from the sends and the arrivals; an
    arrival after ``cutoff`` (the end of the wait for stragglers) is lost like one that never
    came."""
    ok = {s.seq: s.sent for s in sends if s.ok}
    outcome.sent = len(sends)
    outcome.failed_sends = len(sends) - len(ok)
    failures = [s.error for s in sends if not s.ok]
    if failures:
        outcome.notes.append(f"{len(failures)} sends failed, the first: {failures[0]}")
    outcome.expected = len(ok) * outcome.case.fan_out
    outcome.send_ms = [(s.answered - s.sent) * 1000 for s in sends if s.ok]
    outcome.sender_late_ms = max(((s.sent - s.scheduled) * 1000 for s in sends), default=0.0)
    seen: set[tuple[int, int]] = set()
    latencies: list[float] = []
    last = 0.0
    for sockets, seqs, times in rows:
        for socket_index, seq, arrived in zip(sockets, seqs, times, strict=True):
            sent_at = ok.get(seq)
            if sent_at is None or arrived > cutoff:
                continue
            key = (socket_index, seq)
            if key in seen:
                outcome.duplicates += 1
                continue
            seen.add(key)
            latencies.append((arrived - sent_at) * 1000)
            last = max(last, arrived)
    outcome.received = len(seen)
    outcome.latencies_ms = latencies
    outcome.seconds = last - min(ok.values()) if latencies else 0.0


# -- /proc ---------------------------------------------------------------------------------------


def _tree(root: int) -> list[int]:
    """``root`` and its live descendants."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
    found = [root]
    for pid in parents:
        ancestor = pid
        while ancestor > 1 and ancestor != root:
            ancestor = parents.get(ancestor, 0)
        if ancestor == root and pid != root:
            found.append(pid)
    return found


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * _PAGE_KIB
    except OSError:
        return 0


def _machine_busy() -> float:
    """CPU-seconds the machine's cores spent not idle since boot."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / _TICK


def load_average() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])
