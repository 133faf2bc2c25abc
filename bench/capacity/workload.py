"""A workload description (``ebuddy.toml``): what the users do, never what it costs."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any


class WorkloadError(ValueError):
    """The workload file lacks a figure, or holds one that is not a number in range."""


@dataclass(frozen=True)
class Users:
    registered: float
    monthly_active: float
    concurrent_sockets: float


@dataclass(frozen=True)
class Messages:
    per_month: float
    peak_factor: float
    room_share: float
    room_online_members: float
    content_bytes: float


@dataclass(frozen=True)
class ReadsPerSend:
    conversation: float
    talk_partners: float
    room_history: float


@dataclass(frozen=True)
class Contacts:
    uploads_per_day: float
    book_size: float
    inverse_graph_keys: float


@dataclass(frozen=True)
class Partitions:
    busiest_user_partners: float
    busiest_conversation_messages_per_day: float
    busiest_room_messages_per_day: float
    busiest_inbox_emails_per_day: float
    popular_tag_posts_per_day: float
    busiest_author_posts_per_day: float
    busiest_thread_comments_per_day: float
    most_shared_identity_books: float
    pending_fanouts_per_shard: float
    retention_years: float


@dataclass(frozen=True)
class Cluster:
    target_utilisation: float
    cassandra_cores_per_node: float
    replication_factor: float
    gateway_cores_per_host: float
    cassandra_disk_per_node_gb: float
    message_retention_years: float


@dataclass(frozen=True)
class Workload:
    name: str
    users: Users
    messages: Messages
    reads_per_send: ReadsPerSend
    contacts: Contacts
    partitions: Partitions
    cluster: Cluster


#: Fractions: a value outside 0..1 is an error.
_SHARES = {"messages.room_share", "cluster.target_utilisation"}

SECONDS_PER_MONTH = 30 * 86400


def load(path: Path) -> Workload:
    try:
        document = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise WorkloadError(f"{path}: no such workload file") from None
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"{path}: {exc}") from None
    return parse(document)


def parse(document: dict[str, Any]) -> Workload:
    def section(name: str, kind: Any) -> Any:
        table = document.get(name)
        if not isinstance(table, dict):
            raise WorkloadError(f"workload: no [{name}] table")
        values: dict[str, float] = {}
        for f in fields(kind):
            key = f"{name}.{f.name}"
            value = table.get(f.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise WorkloadError(f"workload: {key} must be a number, got {value!r}")
            if value < 0 or (key in _SHARES and value > 1):
                raise WorkloadError(f"workload: {key} must be {'0 to 1' if key in _SHARES else '0 or more'}")
            values[f.name] = float(value)
        unknown = sorted(set(table) - set(values))
        if unknown:
            raise WorkloadError(f"workload: [{name}] has unknown keys {', '.join(unknown)}")
        return kind(**values)

    cluster = section("cluster", Cluster)
    if cluster.target_utilisation == 0:
        raise WorkloadError("workload: cluster.target_utilisation must be above 0")
    for key in ("cassandra_cores_per_node", "gateway_cores_per_host", "replication_factor"):
        if getattr(cluster, key) < 1:
            raise WorkloadError(f"workload: cluster.{key} must be 1 or more")
    return Workload(
        name=str(document.get("name", "workload")),
        users=section("users", Users),
        messages=section("messages", Messages),
        reads_per_send=section("reads_per_send", ReadsPerSend),
        contacts=section("contacts", Contacts),
        partitions=section("partitions", Partitions),
        cluster=cluster,
    )
