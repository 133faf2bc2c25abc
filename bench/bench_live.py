"""Live delivery: what it costs the gateway to deliver a message to every socket subscribed to it.

Two scenarios, each at one gateway process and at ``--workers 2`` with a Redis broker of the
benchmark's own, over a throwaway keyspace:

- **room**: N users (default 200 and 1000, the room cap ``GATEWAY_ROOM_MAX_PARTICIPANTS``) all
  in one room, each with one socket subscribed to ``roomMessages``; one of them posts
  (``postRoomMessage`` over HTTP), and every message is N deliveries, the poster's own
  socket included;
- **pairs**: K one-to-one pairs; one of each pair has a socket subscribed to
  ``messageReceived``, the other sends it direct messages (``sendMessage`` over HTTP), the
  pairs taking turns; every message is one delivery.

Messages go out at a fixed rate R (all senders together) on an open-loop schedule: send
times are fixed in advance and nothing waits for a delivery or for the previous send's
answer, so a gateway that falls behind shows as latency and losses rather than as a slower
sender. Each message's content carries its sequence number (``seq=<n>;``); the sender
records when it sent it, the subscriber sockets when it arrived (both on the system-wide
monotonic clock), and after the last send the benchmark waits at most ``--grace`` seconds
for stragglers. A delivery that did not arrive by then is lost, and reported.

Before a case is measured, probe messages (``probe=<n>;``) are sent until every socket has
received one: every subscription is live, on every process, before the first measured send.

The subscriber sockets live in one or two load processes of their own (``bench/live_load.py``,
lean sockets of ``bench/ws_client.py`` on uvloop); the sender is this process. Per case it
prints, in two tables:

- deliveries expected, received and lost; deliveries per second (received, over the time
  from the first send to the last arrival); send-to-receive latency p50, p99 and max; the
  send mutation's p99; how late the sender was on its schedule at worst;
- CPU-seconds per 1000 deliveries of the gateway processes and of the load generator (the
  load processes and this one), read from /proc, and how many cores each kept busy, beside
  the rest of the machine (the node, Redis and whatever else runs); CQL statements per
  delivery as the gateway's ``/metrics`` counts them, and Cassandra requests per delivery
  as the node counts them for the benchmark's keyspace (below); RSS per idle subscribed
  socket (KiB: the gateway processes' RSS with the sockets open and subscribed, minus before
  they connected, over N) and the gateway's RSS before, idle and after the case.

CQL per delivery, two ways:

- ``gateway_cql_statements`` of ``/metrics`` counts the statements of queries and mutations
  when they answer. Its growth over the case, minus the statements the sends reported in
  their own ``extensions.cql``, is what deliveries added to it. Today a subscription's
  statements are not counted there at all (``GatewayMetrics.subscription_ended`` takes
  none), so the column shows ``not counted`` whenever the counter grew by exactly the
  sends' statements, rather than a 0 that would read as "no CQL per delivery".
- The node's own count: reads, range reads and writes it coordinated for the benchmark's
  keyspace (``system_views.coordinator_*_latency``, Cassandra 4.1 and later). Over a case,
  minus what the sends cost (measured before the sockets connect, by sending a few messages
  nobody is subscribed to) and what the idle gateway does over the same time (measured with
  the sockets open), over the deliveries. It counts a multi-partition ``IN`` read once per
  partition and an LWT not at all; the tables it came from are listed under the tables.

Each case starts fresh gateway processes, so a backlog one case leaves cannot slow the next.
A rate is skipped for a scenario, size and worker count whose lower rate already lost more
than ``--skip-after`` of its deliveries (it clearly cannot keep up); the output says so.

Run: ``scripts/bench live`` (or ``.venv/bin/python -m bench.bench_live``; ``--help`` for the
sizes, rates, worker counts and times); ``--quick`` is one short case (N=200, R=5, 5 s, one
process) for a smoke test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.bench_workers import _env as gateway_env
from bench.bench_workers import _ready_workers
from bench.client import GraphQLClient, HttpError
from bench.harness import _free_port, _process_tree_cpu
from bench.live_load import read_dump
from bench.profile import profiling
from devnode.cassandra import CassandraNode
from devnode.redis import RedisServer
from gateway.broker.memory import InProcessPubSub
from gateway.db import clock
from gateway.db.migrations import drop_keyspace, migrate
from gateway.db.session import Database
from gateway.ratelimit.policy import Limit
from gateway.rooms.history_store import RoomHistory
from gateway.rooms.member_store import MemberStore
from gateway.rooms.service import RoomService
from gateway.rooms.store import RoomStore
from gateway.settings import Settings
from gateway.settings.declare import declared
from gateway.settings.tooling import ToolingSettings
from gateway.users.records import UserRecord
from gateway.users.store import SessionStore, UserStore

ROOM_SUBSCRIPTION = (
    "subscription($r: String!) { roomMessages(room: $r) { id content postedAt author { login } } }"
)
PAIR_SUBSCRIPTION = "subscription { messageReceived { id content sentAt sender { login } } }"
POST = "mutation($r: String!, $c: String!) { postRoomMessage(room: $r, content: $c) { id } }"
SEND = "mutation($to: String!, $c: String!) { sendMessage(to: $to, content: $c) { id } }"

#: Sends made to measure what one send costs the node, before the sockets connect.
CALIBRATION_SENDS = 20
#: Seconds the gateway idles with every socket subscribed, before the case: its RSS is read
#: and what it does to the node meanwhile is measured.
SETTLE_SECONDS = 2.0
#: Seconds to wait for every socket to receive one probe message before sending another.
PROBE_WAIT = 2.0
PROBE_ROUNDS = 30
#: How often the arrivals are counted while waiting for stragglers.
POLL_SECONDS = 0.25
#: Sockets from which the subscribers are split over two load processes by default.
TWO_LOAD_PROCESSES_FROM = 500
#: Connections the sender keeps open (sends in flight beyond that open more).
SENDER_CONNECTIONS = 8
#: How many users and sessions are written at once while preparing, and how many joins.
SETUP_CONCURRENCY = 100
JOIN_CONCURRENCY = 4

_TICK = os.sysconf("SC_CLK_TCK")
_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


# -- the world: users, sessions and rooms, written once per run --------------------------------


@dataclass(frozen=True)
class Member:
    login: str
    token: str


@dataclass
class World:
    """What every case of a run shares: the keyspace's users (with a session each), the rooms
    (``rooms[size]``: the first ``size`` users, created by the first one) and, for the
    cases with workers, the broker's URL."""

    settings: Settings
    db: Database
    members: list[Member]
    rooms: dict[int, str] = field(default_factory=dict)
    broker_url: str = ""
    #: The Cassandra node's and the broker's processes, when they are local: their CPU is shown.
    node_pid: int | None = None
    redis_pid: int | None = None


async def prepare(
    settings: Settings, db: Database, room_sizes: Sequence[int], pairs: int, broker_url: str = ""
) -> World:
    """Users (written on the driver: signing up a thousand through argon2 would measure
    argon2), a session each, and one room per size."""
    users = UserStore(db, settings)
    sessions = SessionStore(db, settings)
    count = max([*room_sizes, 2 * pairs, 1])
    tag = uuid.uuid4().hex[:6]

    async def one(i: int) -> Member:
        login = f"live{tag}{i}"
        await users.create(
            UserRecord(login, "Live", f"User {i}", f"{login}@example.com", "", clock.now(), "")
        )
        return Member(login, (await sessions.create(login)).token)

    members: list[Member] = []
    for start in range(0, count, SETUP_CONCURRENCY):
        members.extend(
            await asyncio.gather(*(one(i) for i in range(start, min(count, start + SETUP_CONCURRENCY))))
        )
    world = World(settings, db, members, broker_url=broker_url)
    service = RoomService(
        db, RoomStore(db, settings), MemberStore(db, settings), RoomHistory(db, settings), InProcessPubSub()
    )
    for size in sorted(set(room_sizes)):
        name = f"live-{tag}-{size}"
        await service.create(members[0].login, name, None)
        await _join_all(service, name, members[1:size])
        world.rooms[size] = name
    return world


async def _join_all(service: RoomService, room: str, members: Sequence[Member]) -> None:
    """A few joins at a time: every join is an LWT on the room's one partition."""
    limit = asyncio.Semaphore(JOIN_CONCURRENCY)

    async def join(member: Member) -> None:
        async with limit:
            await service.join(member.login, room)

    await asyncio.gather(*(join(m) for m in members))


# -- a case ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    scenario: str  # "room" or "pairs"
    size: int  # sockets of the room, or pairs
    rate: float  # messages per second, all senders together
    workers: int

    @property
    def label(self) -> str:
        size = f"N={self.size}" if self.scenario == "room" else f"K={self.size}"
        return f"{self.scenario} {size} R={self.rate:g} w{self.workers}"

    @property
    def sockets(self) -> int:
        return self.size

    @property
    def fan_out(self) -> int:
        """Deliveries per message."""
        return self.size if self.scenario == "room" else 1


@dataclass
class Plan:
    """Who subscribes, with what, and who sends what to whom."""

    sockets: list[tuple[int, str]]  # (member index, token)
    subscription: dict[str, Any]
    send: Callable[[int, str], tuple[str, str, dict[str, Any]]]  # (message number, content) -> call


def plan(world: World, case: Case) -> Plan:
    members = world.members
    if case.scenario == "room":
        room = world.rooms[case.size]
        poster = members[0].token
        return Plan(
            sockets=[(i, members[i].token) for i in range(case.size)],
            subscription={"query": ROOM_SUBSCRIPTION, "variables": {"r": room}},
            send=lambda _, content: (poster, POST, {"r": room, "c": content}),
        )
    pairs = case.size

    def send(number: int, content: str) -> tuple[str, str, dict[str, Any]]:
        pair = number % pairs
        return members[pairs + pair].token, SEND, {"to": members[pair].login, "c": content}

    return Plan(
        sockets=[(i, members[i].token) for i in range(pairs)],
        subscription={"query": PAIR_SUBSCRIPTION},
        send=send,
    )


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
    """Counters read at one moment."""

    at: float
    gateway_cpu: float
    load_cpu: float
    sender_cpu: float
    node_cpu: float
    redis_cpu: float
    machine_busy: float
    cql_counter: float
    node: dict[str, int]


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
    seconds: float = 0.0
    window: float = 0.0
    gateway_cpu: float = 0.0
    load_cpu: float = 0.0
    sender_cpu: float = 0.0
    node_cpu: float = 0.0
    redis_cpu: float = 0.0
    machine_busy: float = 0.0
    send_statements: int = 0
    cql_counter: float = 0.0
    node_requests: float | None = None
    node_tables: dict[str, float] = field(default_factory=dict)
    rss_before_kib: int = 0
    rss_idle_kib: int = 0
    rss_after_kib: int = 0
    load_processes: int = 1
    notes: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return self.expected - self.received

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")

    @property
    def deliveries_per_second(self) -> float:
        return self.received / self.seconds if self.seconds else 0.0

    def per_1000(self, cpu: float) -> float:
        return cpu * 1000 / self.received if self.received else float("nan")

    def cores(self, cpu: float) -> float:
        return cpu / self.window if self.window else 0.0

    @property
    def send_p99(self) -> float:
        ordered = sorted(self.send_ms)
        return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else float("nan")

    @property
    def cql_per_delivery(self) -> str:
        added = self.cql_counter - self.send_statements
        if added == 0:
            return "not counted"
        return f"{added / self.received:.2f}" if self.received else "n/a"

    @property
    def rss_per_socket_kib(self) -> float:
        return (self.rss_idle_kib - self.rss_before_kib) / self.case.sockets


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


@dataclass
class Gateway:
    pid: int
    base: str
    http: aiohttp.ClientSession
    client: GraphQLClient
    #: The errors the gateway logged, once it exited (its log goes to a file, not the report).
    errors: list[str] = field(default_factory=list)

    async def cql_counter(self) -> float:
        async with self.http.get(f"{self.base}/metrics") as response:
            text = await response.text()
        match = re.search(r"^gateway_cql_statements_total ([0-9.e+]+)$", text, re.MULTILINE)
        return float(match.group(1)) if match else 0.0

    @property
    def rss_kib(self) -> int:
        return sum(_rss_kib(pid) for pid in _tree(self.pid))

    @property
    def cpu(self) -> float:
        return _process_tree_cpu(self.pid)


def _limits_env() -> dict[str, str]:
    """Every rate limit on (its cost is measured) but out of reach of the benchmark's senders."""
    variables = {item.name: spec.variable for item, spec in declared(Settings)}
    return {variables[limit.value]: "1000000/s" for limit in Limit}


@contextlib.asynccontextmanager
async def gateway(world: World, workers: int) -> AsyncIterator[Gateway]:
    """``gateway serve --workers N`` as an operator runs it, on a free port; 2 or more with
    the run's broker."""
    port = _free_port()
    broker = world.broker_url if workers > 1 else ""
    env = {
        **gateway_env(world.settings, port, broker),
        **_limits_env(),
        "GATEWAY_DRAIN_SECONDS": "2",
        # The contacts fan-out worker's look for orphaned jobs reads a table every few seconds,
        # nothing a delivery does; once in ten minutes it stays out of the node's counts.
        "GATEWAY_CONTACTS_FANOUT_POLL_SECONDS": "600",
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


async def _probe_until_live(gw: Gateway, plan_: Plan, case: Case, loads: list[LoadProcess]) -> int:
    """Probe messages until every socket has received one (its subscription is live on the
    process that holds it, and the broker reaches that process); how many rounds it took."""
    targets = range(case.size) if case.scenario == "pairs" else range(1)
    for probe in range(PROBE_ROUNDS):
        answers = await asyncio.gather(*(_send(gw, plan_, t, f"probe={probe};") for t in targets))
        failed = [a.error for a in answers if not a.ok]
        if failed:
            raise RuntimeError(f"a probe message was refused: {failed[0]}")
        deadline = time.monotonic() + PROBE_WAIT
        while time.monotonic() < deadline:
            statuses = [await load.ask({"cmd": "status", "probe": probe}) for load in loads]
            if sum(s["probed"] for s in statuses) == case.sockets:
                return probe + 1
            await asyncio.sleep(0.1)
    live = sum(s["probed"] for s in statuses)
    ended = [e for s in statuses for e in s["ended"]]
    raise RuntimeError(f"only {live} of {case.sockets} subscriptions received a probe; ended: {ended}")


async def _node_counts(world: World) -> dict[str, int]:
    """Requests the node coordinated for the keyspace, by kind and table (cumulative)."""

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


def _difference(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)}


async def _resources(gw: Gateway, loads: list[LoadProcess], world: World) -> Resources:
    return Resources(
        at=time.monotonic(),
        gateway_cpu=gw.cpu,
        load_cpu=sum(load.cpu for load in loads),
        sender_cpu=time.process_time(),
        node_cpu=_process_tree_cpu(world.node_pid) if world.node_pid else 0.0,
        redis_cpu=_process_tree_cpu(world.redis_pid) if world.redis_pid else 0.0,
        machine_busy=_machine_busy(),
        cql_counter=await gw.cql_counter(),
        node=await _node_counts(world),
    )


async def run_case(
    world: World, case: Case, *, duration: float, grace: float, load_processes: int | None = None
) -> Outcome:
    """One case, on gateway processes of its own; see the module's docstring for what is measured."""
    outcome = Outcome(case)
    plan_ = plan(world, case)
    count = max(1, round(case.rate * duration))
    first_seq = _next_seq(count)
    async with gateway(world, case.workers) as gw:
        # Connections of the sender, and one send: statements prepared, code paths warm.
        await asyncio.gather(*(gw.client.post("{ __typename }") for _ in range(SENDER_CONNECTIONS)))
        await _send(gw, plan_, 0, "warm-up")
        node_before = await _node_counts(world)
        for i in range(CALIBRATION_SENDS):
            await _send(gw, plan_, i, "calibration")
        per_send = {
            k: v / CALIBRATION_SENDS for k, v in _difference(await _node_counts(world), node_before).items()
        }
        outcome.rss_before_kib = gw.rss_kib

        processes = load_processes or (2 if case.sockets >= TWO_LOAD_PROCESSES_FROM else 1)
        processes = max(1, min(processes, case.sockets))
        outcome.load_processes = processes
        host, port = "127.0.0.1", int(gw.base.rsplit(":", 1)[1])
        opening = time.monotonic()
        loads = [
            await LoadProcess.start({
                "host": host, "port": port, "path": "/graphql", "subscription": plan_.subscription,
                "sockets": plan_.sockets[p::processes], "concurrency": 50,
            })
            for p in range(processes)
        ]  # fmt: skip
        try:
            opened = [await load.read() for load in loads]
            if sum(o["subscribed"] for o in opened) != case.sockets:
                failed = [f for o in opened for f in o["failed"]]
                raise RuntimeError(f"not every socket subscribed: {failed}")
            subscribed = time.monotonic() - opening
            rounds = await _probe_until_live(gw, plan_, case, loads)
            print(
                f"  {case.sockets} sockets subscribed in {subscribed:.1f} s, all live after "
                f"{rounds} probe round(s)",
                flush=True,
            )
            idle_before = await _node_counts(world)
            idle_started = time.monotonic()
            await asyncio.sleep(SETTLE_SECONDS)
            background = _difference(await _node_counts(world), idle_before)
            idle_seconds = time.monotonic() - idle_started
            outcome.rss_idle_kib = gw.rss_kib

            before = await _resources(gw, loads, world)
            # With BENCH_PROFILE, py-spy samples the (first) gateway process meanwhile.
            workers = [pid for pid in _tree(gw.pid) if pid != gw.pid]
            with profiling(gw.pid if case.workers == 1 else min(workers, default=None), case.label):
                sends = await _send_on_schedule(gw, plan_, first_seq, count, case.rate, grace)
                last_send = max((s.sent for s in sends), default=time.monotonic())
                expected_now = count * case.fan_out
                deadline = last_send + grace
                while time.monotonic() < deadline:
                    statuses = [await load.ask({"cmd": "status"}) for load in loads]
                    if sum(s["received"] for s in statuses) >= expected_now:
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
                statuses = [await load.ask({"cmd": "status"}) for load in loads]
        finally:
            for load in loads:
                await load.close()

    outcome.notes.extend(f"gateway logged {e}" for e in gw.errors)
    for status in statuses:
        outcome.notes.extend(f"socket ended: {e}" for e in status["ended"])
        outcome.notes.extend(f"unexpected frame: {u}" for u in status["unexpected"])
    _tally(outcome, sends, rows, after.at)
    outcome.window = after.at - before.at
    outcome.gateway_cpu = after.gateway_cpu - before.gateway_cpu
    outcome.load_cpu = after.load_cpu - before.load_cpu
    outcome.sender_cpu = after.sender_cpu - before.sender_cpu
    outcome.node_cpu = after.node_cpu - before.node_cpu
    outcome.redis_cpu = after.redis_cpu - before.redis_cpu
    outcome.machine_busy = after.machine_busy - before.machine_busy
    outcome.cql_counter = after.cql_counter - before.cql_counter
    outcome.send_statements = sum(s.statements for s in sends)
    if after.node:
        during = _difference(after.node, before.node)
        shares = {
            key: during.get(key, 0)
            - per_send.get(key, 0.0) * len(sends)
            - background.get(key, 0) * outcome.window / idle_seconds
            for key in {*during, *per_send, *background}
        }
        if outcome.received:
            outcome.node_requests = sum(shares.values()) / outcome.received
            outcome.node_tables = {
                k: v / outcome.received
                for k, v in sorted(shares.items())
                if abs(v) / outcome.received >= 0.01
            }
    return outcome


_seq = 0


def _next_seq(count: int) -> int:
    """The first of ``count`` sequence numbers no other case of this run uses."""
    global _seq
    first, _seq = _seq, _seq + count
    return first


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


def _tally(outcome: Outcome, sends: list[Sent], rows: list[Any], cutoff: float) -> None:
    """Deliveries expected and received, latencies, from the sends and the arrivals; an
    arrival after ``cutoff`` (the end of the wait for stragglers) is lost like one that never
    came."""
    ok = {s.seq: s.sent for s in sends if s.ok}
    outcome.sent = len(sends)
    outcome.failed_sends = len(sends) - len(ok)
    for s in sends:
        if not s.ok:
            outcome.notes.append(f"send {s.seq} failed: {s.error}")
            break
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
    first = min(ok.values(), default=0.0)
    outcome.seconds = last - first if latencies else 0.0


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
    """CPU-seconds every core of the machine spent not idle since boot."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / _TICK


def _load_average() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


# -- the report -----------------------------------------------------------------------------------


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


DELIVERY_COLUMNS = (
    "case", "sent", "expected", "received", "lost", "deliveries/s", "p50 ms", "p99 ms", "max ms",
    "send p99 ms", "sender late ms",
)  # fmt: skip
COST_COLUMNS = (
    "case", "gateway CPU s/1000", "load CPU s/1000: sockets + sender",
    "cores: gateway / sockets (processes) / sender / node / Redis / other", "CQL/delivery (/metrics)",
    "node requests/delivery", "RSS KiB/socket", "gateway RSS MiB before/idle/after",
)  # fmt: skip


def report(outcomes: list[Outcome], skipped: list[str]) -> None:
    print("\n### Delivery\n")
    print(_row(DELIVERY_COLUMNS))
    print(_row(["---", *["---:"] * (len(DELIVERY_COLUMNS) - 1)]))
    for o in outcomes:
        lost = f"{o.lost} ({o.lost / o.expected:.0%})" if o.expected and o.lost else str(o.lost)
        worst = max(o.latencies_ms, default=float("nan"))
        print(_row([
            o.case.label, o.sent, o.expected, o.received, lost, f"{o.deliveries_per_second:.0f}",
            f"{o.pct(0.5):.1f}", f"{o.pct(0.99):.1f}", f"{worst:.1f}", f"{o.send_p99:.1f}",
            f"{o.sender_late_ms:.1f}",
        ]))  # fmt: skip
    print("\n### Cost\n")
    print(_row(COST_COLUMNS))
    print(_row(["---", "---:", "---:", "---", *["---:"] * (len(COST_COLUMNS) - 4)]))
    for o in outcomes:
        other = o.machine_busy - o.gateway_cpu - o.load_cpu - o.sender_cpu - o.node_cpu - o.redis_cpu
        cores = (
            f"{o.cores(o.gateway_cpu):.2f} / {o.cores(o.load_cpu):.2f} ({o.load_processes}) / "
            f"{o.cores(o.sender_cpu):.2f} / {o.cores(o.node_cpu):.2f} / {o.cores(o.redis_cpu):.2f} / "
            f"{o.cores(other):.2f}"
        )
        load = f"{o.per_1000(o.load_cpu):.3f} + {o.per_1000(o.sender_cpu):.3f}"
        node = f"{o.node_requests:.2f}" if o.node_requests is not None else "n/a"
        rss = f"{o.rss_before_kib / 1024:.0f}/{o.rss_idle_kib / 1024:.0f}/{o.rss_after_kib / 1024:.0f}"
        print(_row([
            o.case.label, f"{o.per_1000(o.gateway_cpu):.3f}", load, cores,
            o.cql_per_delivery, node, f"{o.rss_per_socket_kib:.1f}", rss,
        ]))  # fmt: skip
    print()
    for o in outcomes:
        if o.node_tables:
            tables = ", ".join(f"{k} {v:.2f}" for k, v in o.node_tables.items())
            print(f"- {o.case.label}: node requests per delivery by table: {tables}")
        for note in o.notes[:5]:
            print(f"- {o.case.label}: {note}")
    if any(o.cql_per_delivery == "not counted" for o in outcomes):
        print(
            "- CQL/delivery (/metrics) 'not counted': gateway_cql_statements grew by exactly the "
            "statements the sends reported; it counts queries and mutations, not what a subscription "
            "runs per event."
        )
    for line in skipped:
        print(f"- skipped: {line}")


# -- the command line ------------------------------------------------------------------------------


def _numbers(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.bench_live", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="one short case: room N=200, R=5, 5 s, one process"
    )
    parser.add_argument("--sizes", default="200,1000", help="room sizes, comma-separated (0: no room cases)")
    parser.add_argument("--rates", default="5,20,50", help="room messages per second, comma-separated")
    parser.add_argument("--pairs", type=int, default=100, help="one-to-one pairs (0: no pair cases)")
    parser.add_argument(
        "--pair-rates", default="20,50", help="direct messages per second, all pairs together"
    )
    parser.add_argument("--workers", default="1,2", help="gateway processes per case, comma-separated")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of sending per case")
    parser.add_argument("--grace", type=float, default=10.0, help="seconds to wait for stragglers")
    parser.add_argument(
        "--load-processes", type=int, default=0,
        help=f"subscriber processes (default: 2 from {TWO_LOAD_PROCESSES_FROM} sockets, else 1)",
    )  # fmt: skip
    parser.add_argument(
        "--skip-after", type=float, default=0.1,
        help="skip higher rates once a case of the same scenario, size and workers lost this share",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.rates, args.pairs, args.workers, args.duration, args.grace = (
            "200",
            "5",
            0,
            "1",
            5.0,
            5.0,
        )
    return args


def cases_of(args: argparse.Namespace) -> list[Case]:
    workers = [int(w) for w in _numbers(args.workers)]
    cases = [
        Case("room", int(size), rate, w)
        for w in workers
        for size in _numbers(args.sizes)
        if size
        for rate in sorted(_numbers(args.rates))
    ]
    if args.pairs:
        cases += [
            Case("pairs", args.pairs, rate, w) for w in workers for rate in sorted(_numbers(args.pair_rates))
        ]
    return cases


@contextlib.asynccontextmanager
async def world_of(
    settings: Settings, room_sizes: Sequence[int], pairs: int, broker_url: str = ""
) -> AsyncIterator[World]:
    """A fresh keyspace (``settings.keyspace``, dropped after) holding :func:`prepare`'s world."""
    node: CassandraNode | None = None
    if settings.embedded:
        node = CassandraNode(ToolingSettings.from_env(), settings.cassandra_port)
        await asyncio.to_thread(node.start)
    db = Database(replace(settings, cassandra_io="thread"))
    try:
        await asyncio.to_thread(db.connect)
        await asyncio.to_thread(migrate, db, settings.keyspace)
        world = await prepare(settings, db, room_sizes, pairs, broker_url)
        world.node_pid = node.status().pid if node is not None else None
        yield world
    finally:
        if db.connected:
            await asyncio.to_thread(drop_keyspace, db, settings.keyspace)
            await asyncio.to_thread(db.shutdown)


@contextlib.asynccontextmanager
async def own_redis() -> AsyncIterator[RedisServer]:
    """A Redis server of the benchmark's own, on a free port, stopped after."""
    home = Path(tempfile.mkdtemp(prefix="bench-redis-"))
    redis = RedisServer(
        ToolingSettings(cassandra_home=home, redis_port=_free_port()), progress=lambda _: None
    )
    await asyncio.to_thread(redis.start)
    try:
        yield redis
    finally:
        await asyncio.to_thread(redis.stop)


async def run_cases(
    world: World, cases: list[Case], args: argparse.Namespace
) -> tuple[list[Outcome], list[str]]:
    """Each case in turn, but not a rate that a lower one already showed cannot be kept up."""
    outcomes: list[Outcome] = []
    skipped: list[str] = []
    behind: dict[tuple[str, int, int], Outcome] = {}
    for case in cases:
        key = (case.scenario, case.size, case.workers)
        lagging = behind.get(key)
        if lagging is not None:
            skipped.append(
                f"{case.label}: at R={lagging.case.rate:g} it already lost {lagging.lost} of "
                f"{lagging.expected} deliveries"
            )
            print(f"skip {case.label}", flush=True)
            continue
        print(f"{case.label} (load average {_load_average()})", flush=True)
        outcome = await run_case(
            world, case, duration=args.duration, grace=args.grace, load_processes=args.load_processes or None
        )
        outcomes.append(outcome)
        print(
            f"  {outcome.received}/{outcome.expected} delivered, p99 {outcome.pct(0.99):.0f} ms, "
            f"gateway {outcome.cores(outcome.gateway_cpu):.2f} cores",
            flush=True,
        )
        if outcome.expected and outcome.lost > args.skip_after * outcome.expected:
            behind[key] = outcome
    return outcomes, skipped


async def main(argv: Sequence[str] | None = None) -> None:
    args = arguments(argv)
    cases = cases_of(args)
    settings = replace(Settings.from_env(), keyspace=f"bench_{uuid.uuid4().hex[:10]}")
    started = time.monotonic()
    print(f"live delivery: {os.cpu_count()} cores, load average {_load_average()} at the start", flush=True)
    sizes = sorted({c.size for c in cases if c.scenario == "room"})
    pairs = max((c.size for c in cases if c.scenario == "pairs"), default=0)
    async with contextlib.AsyncExitStack() as stack:
        redis = await stack.enter_async_context(own_redis()) if any(c.workers > 1 for c in cases) else None
        world = await stack.enter_async_context(world_of(settings, sizes, pairs, redis.url if redis else ""))
        world.redis_pid = redis.status().pid if redis else None
        print(f"prepared {len(world.members)} users, rooms of {sizes} in {time.monotonic() - started:.0f} s")
        outcomes, skipped = await run_cases(world, cases, args)
    print(
        f"\n## live delivery ({os.cpu_count()} cores; {args.duration:g} s of sending per case, "
        f"{args.grace:g} s grace; load average {_load_average()} at the end, "
        f"{time.monotonic() - started:.0f} s in all)"
    )
    report(outcomes, skipped)


if __name__ == "__main__":
    asyncio.run(main())
