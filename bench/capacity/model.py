"""The capacity a workload needs, from the costs the benchmarks measured.

Every line is a sum of terms, each a rate of the workload at its peak times a measured cost;
the line's capacity is that sum over ``cluster.target_utilisation`` (the headroom), rounded up,
and its dominant input is its largest term.

- **Gateway cores**: each operation's requests per second times its gateway CPU per request
  (``scripts/bench``), every delivery times the gateway CPU per delivery (``scripts/bench
  live``, the room case at one process, its posts taken off), and for every room message the
  execution each further process makes for its own sockets (the same room at two processes
  against one). Memory: the subscribed sockets times the RSS per idle socket.
- **Redis shards** (one core each: Redis runs commands on one thread): every message times
  the Redis CPU per direct message at two processes (the pairs case: its publish, the fan-out
  to the processes, and whatever else a send asks of Redis).
- **Cassandra nodes**: each operation's requests per second times its statements (a lightweight
  transaction counted as four: Paxos's prepare, read, propose and commit) times the node's CPU
  per statement (its process CPU over the request benchmarks, over every CQL request it served
  meanwhile, from every client: the node is shared), times the replicas that do the work at
  ``replication_factor`` (all of them for a write, a quorum for a read: the benchmarks ran on
  one node at replication 1), plus every delivery's node CPU; the disk line is a year of
  messages (``direct_messages`` rows as ``partitions.py`` sizes them) and the inverse social
  graph (``contact_index``), times the replication factor, over the disk a node may fill. The
  nodes are the larger of the two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.capacity import partitions
from bench.capacity.inputs import Inputs
from bench.capacity.workload import SECONDS_PER_MONTH, Workload


@dataclass(frozen=True)
class Term:
    what: str
    #: Cores (or GB for the disk line).
    amount: float


@dataclass(frozen=True)
class Line:
    name: str
    unit: str
    needed: int
    terms: list[Term]
    note: str = ""

    @property
    def total(self) -> float:
        return sum(t.amount for t in self.terms)

    @property
    def dominant(self) -> Term:
        return max(self.terms, key=lambda t: t.amount)


@dataclass(frozen=True)
class Rates:
    """The workload's peak, per second."""

    sends: float
    direct: float
    room_posts: float
    deliveries: float
    requests: dict[str, float]


def rates(w: Workload) -> Rates:
    sends = w.messages.per_month / SECONDS_PER_MONTH * w.messages.peak_factor
    room_posts = sends * w.messages.room_share
    direct = sends - room_posts
    return Rates(
        sends=sends,
        direct=direct,
        room_posts=room_posts,
        deliveries=direct + room_posts * w.messages.room_online_members,
        requests={
            "send": direct,
            "conversation": direct * w.reads_per_send.conversation,
            "talk_partners": direct * w.reads_per_send.talk_partners,
            "room_post": room_posts,
            "room_history": room_posts * w.reads_per_send.room_history,
            # An upload's cost was measured for one book of the benchmark's size: per contact.
            "contact_upload": w.contacts.uploads_per_day / 86400 * w.messages.peak_factor,
        },
    )


def _upload_scale(w: Workload, i: Inputs) -> float:
    """Contacts per uploaded book of the workload over those of the measured upload."""
    measured = _book_size(i.operations["contact_upload"].case)
    return w.contacts.book_size / measured if measured else 1.0


def _book_size(case: str) -> int:
    digits = "".join(ch for ch in case.rsplit("fresh", 1)[-1] if ch.isdigit())
    return int(digits) if digits else 0


def _cores(amount: float, w: Workload) -> int:
    return math.ceil(amount / w.cluster.target_utilisation - 1e-9)


def gateway(w: Workload, i: Inputs) -> Line:
    r = rates(w)
    terms = []
    for name, op in i.operations.items():
        cost = op.gateway_cpu_ms * (_upload_scale(w, i) if name == "contact_upload" else 1)
        terms.append(
            Term(f"{name} {r.requests[name]:,.0f}/s × {cost:.2f} ms", r.requests[name] * cost / 1000)
        )
    terms.append(
        Term(
            f"deliveries {r.deliveries:,.0f}/s × {i.delivery.gateway_cpu_us:.0f} µs",
            r.deliveries * i.delivery.gateway_cpu_us / 1e6,
        )
    )
    further = max(0.0, w.messages.room_online_members - 1)
    terms.append(
        Term(
            f"room messages on {further:.0f} further processes {r.room_posts:,.0f}/s × {further:.0f} × "
            f"{i.delivery.per_process_message_us:.0f} µs",
            r.room_posts * further * i.delivery.per_process_message_us / 1e6,
        )
    )
    needed = _cores(sum(t.amount for t in terms), w)
    memory_gb = w.users.concurrent_sockets * i.rss_kib_per_socket * 1024 / 1e9
    hosts = max(math.ceil(needed / w.cluster.gateway_cores_per_host), 1)
    return Line(
        "gateway cores",
        "cores",
        needed,
        terms,
        f"{hosts} hosts of {w.cluster.gateway_cores_per_host:.0f} cores; sockets: "
        f"{w.users.concurrent_sockets:,.0f} × {i.rss_kib_per_socket:.0f} KiB = {memory_gb:,.0f} GB of RSS",
    )


def redis(w: Workload, i: Inputs) -> Line:
    r = rates(w)
    terms = [
        Term(
            f"messages {r.sends:,.0f}/s × {i.redis_cpu_us_per_send:.0f} µs",
            r.sends * i.redis_cpu_us_per_send / 1e6,
        )
    ]
    return Line("Redis shards", "shards", max(1, _cores(terms[0].amount, w)), terms, "one core per shard")


def cassandra(w: Workload, i: Inputs) -> Line:
    r = rates(w)
    rf = w.cluster.replication_factor
    quorum = math.floor(rf / 2) + 1
    terms = []
    for name, op in i.operations.items():
        replicas = rf if op.writes else quorum
        cost = op.node_cpu_ms * (_upload_scale(w, i) if name == "contact_upload" else 1)
        what = f"{name} {r.requests[name]:,.0f}/s × {cost:.2f} ms × {replicas:.0f} replicas"
        terms.append(Term(what, r.requests[name] * cost / 1000 * replicas))
    terms.append(
        Term(
            f"deliveries {r.deliveries:,.0f}/s × {i.delivery.node_cpu_us:.1f} µs × {quorum} replicas",
            r.deliveries * i.delivery.node_cpu_us / 1e6 * quorum,
        )
    )
    cores = sum(t.amount for t in terms)
    cpu_nodes = math.ceil(cores / w.cluster.target_utilisation / w.cluster.cassandra_cores_per_node - 1e-9)
    disk = disk_terms(w)
    disk_nodes = math.ceil(sum(t.amount for t in disk) / w.cluster.cassandra_disk_per_node_gb - 1e-9)
    needed = max(cpu_nodes, disk_nodes, math.ceil(rf))
    return Line(
        "Cassandra nodes",
        f"nodes of {w.cluster.cassandra_cores_per_node:.0f} cores",
        needed,
        terms,
        f"CPU: {cores:,.1f} cores busy at the peak, {cpu_nodes} nodes at {w.cluster.target_utilisation:.0%}; "
        f"disk: {sum(t.amount for t in disk):,.0f} GB, {disk_nodes} nodes of "
        f"{w.cluster.cassandra_disk_per_node_gb:,.0f} GB ({'; '.join(t.what for t in disk)})",
    )


def disk_terms(w: Workload) -> list[Term]:
    rf = w.cluster.replication_factor
    tables = partitions.tables()
    message = partitions.row_bytes(tables["direct_messages"], w)
    index = partitions.row_bytes(tables["contact_index"], w) + 32  # its key, one per row
    messages = w.messages.per_month * 12 * w.cluster.message_retention_years
    return [
        Term(
            f"messages {messages:,.0f} × {message:.0f} B × {rf:.0f}",
            messages * message * rf / 1e9,
        ),
        Term(
            f"inverse graph {w.contacts.inverse_graph_keys:,.0f} keys × {index:.0f} B × {rf:.0f}",
            w.contacts.inverse_graph_keys * index * rf / 1e9,
        ),
    ]


def lines(w: Workload, i: Inputs) -> list[Line]:
    return [gateway(w, i), redis(w, i), cassandra(w, i)]


@dataclass(frozen=True)
class Prediction:
    deliveries_per_second: float
    gateway_cores: float
    limited_by: str


def predict_room(i: Inputs, *, size: int, rate: float, workers: int, cores: float) -> Prediction:
    """A ``scripts/bench live`` room case on this machine: ``rate`` posts a second to a room of
    ``size`` sockets over ``workers`` processes, with ``cores`` cores free for the gateway."""
    post = i.operations["room_post"].gateway_cpu_ms / 1000
    delivery = i.delivery.gateway_cpu_us / 1e6
    further = i.delivery.per_process_message_us / 1e6 * (workers - 1)
    asked = rate * (post + size * delivery + further)
    available = min(float(workers), cores)
    if asked <= available:
        return Prediction(rate * size, asked, "the rate asked")
    messages = available / (post + size * delivery + further)
    return Prediction(messages * size, available, f"{available:.2f} cores for the gateway")
