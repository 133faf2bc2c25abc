"""The largest partition a workload produces in each table of ``cql/*.cql``, beside Cassandra's
guidance (about 100 MB and 100 000 rows per partition).

The tables and their columns are read from the migrations themselves (``CREATE TABLE`` and
``ALTER TABLE ... ADD``), so a new table without a line here is an error, not a gap. A row's
bytes are estimated from its columns' types the way Cassandra's storage format lays them out
before compression: fixed-size values at their size, text at the lengths below, a few bytes of
flags, timestamp and length per cell and per row. A partition's rows come from the busiest case
of the workload (``[partitions]`` of the workload file) or from the gateway's own bound where
one holds (a setting's default such as ``GATEWAY_ROOM_MAX_PARTICIPANTS``, a time bucket, a
constant of the code), whichever the table is bounded by.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.capacity.workload import Workload
from gateway.contacts.records import SHARDS
from gateway.contacts.rules import MAX_CONTACTS_PER_UPLOAD, NETWORKS
from gateway.contacts.service import MAX_IDENTITIES_PER_USER
from gateway.mail.attachment_store import CHUNK_SIZE, PART_SIZE
from gateway.mail.service import MAX_FOLDERS
from gateway.settings import Settings

CQL = Path(__file__).resolve().parents[2] / "cql"

GUIDANCE_BYTES = 100 * 1000 * 1000
GUIDANCE_ROWS = 100_000

#: Bytes of fixed-size values.
FIXED = {
    "uuid": 16, "timeuuid": 16, "timestamp": 8, "bigint": 8, "counter": 8, "int": 4,
    "tinyint": 1, "boolean": 1, "blob": 32,
}  # fmt: skip
#: Characters of text values by column name (a login, a title ...); others are TEXT_DEFAULT.
#: ``content``, a message's text, is the workload's ``messages.content_bytes``.
TEXT = {
    "login": 12, "owner": 12, "partner": 12, "sender": 12, "recipient": 12, "author": 12,
    "author_login": 12, "creator_login": 12, "username": 12, "after_login": 12, "actor": 12,
    "conversation_id": 25, "client_message_id": 36, "room_name": 20, "name": 20, "label": 12,
    "color": 7, "network": 8, "network_id": 20, "email": 24, "firstname": 10, "lastname": 12,
    "bio": 140, "password_hash": 97, "banner": 100, "slug": 40, "title": 60, "body": 3000,
    "subject": 60, "text": 400, "tag": 12, "tags": 12, "recipients": 12, "operation": 20,
    "key": 36, "result": 200,
}  # fmt: skip
TEXT_DEFAULT = 16
#: Elements of a list or set column (the busiest row's): tags of a post, recipients of an email.
ELEMENTS = {"tags": 3, "recipients": 3, "attachments": 2}
#: A cell's flags, timestamp delta and value length; a row's flags, size and timestamps.
CELL_OVERHEAD = 3
ROW_OVERHEAD = 8


@dataclass(frozen=True)
class Table:
    name: str
    columns: dict[str, str]
    partition_key: tuple[str, ...]
    clustering: tuple[str, ...]


def tables(directory: Path = CQL) -> dict[str, Table]:
    """Every table of the migrations, in the order they create them, with its columns as the
    last migration leaves them."""
    found: dict[str, Table] = {}
    for path in sorted(directory.glob("*.cql")):
        text = re.sub(r"--[^\n]*", "", path.read_text())
        for statement in text.split(";"):
            statement = " ".join(statement.split())
            create = re.match(
                r"CREATE TABLE (?:IF NOT EXISTS )?(\w+) \((.*?)\)(?: WITH .*)?$", statement, re.I
            )
            if create:
                found[create[1]] = _table(create[1], create[2])
                continue
            alter = re.match(r"ALTER TABLE (\w+) ADD (?:IF NOT EXISTS )?(.*)$", statement, re.I)
            if alter:
                table = found[alter[1]]
                for part in _split(alter[2].strip("() ")):
                    column, kind = part.split(" ", 1)
                    table.columns[column] = kind.strip()
    return found


def _split(text: str) -> list[str]:
    """Comma-separated parts, commas inside <> and () kept."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def _table(name: str, body: str) -> Table:
    columns: dict[str, str] = {}
    key: list[str] = []
    for part in _split(body):
        primary = re.match(r"PRIMARY KEY \((.*)\)$", part, re.I)
        if primary:
            key = _split(primary[1])
            continue
        column, kind = part.split(" ", 1)
        if kind.upper().endswith(" PRIMARY KEY"):
            kind = kind[: -len(" PRIMARY KEY")]
            key = [column]
        columns[column] = kind.strip()
    partition = tuple(k.strip() for k in key[0].strip("()").split(","))
    return Table(name, columns, partition, tuple(key[1:]))


def value_bytes(column: str, kind: str, workload: Workload) -> float:
    kind = kind.lower().replace(" ", "")
    inner = re.match(r"(?:frozen<)?(list|set)<(.*)>>?$", kind)
    if inner:
        return ELEMENTS.get(column, 1) * (value_bytes(column, inner[2], workload) + CELL_OVERHEAD)
    tuple_ = re.match(r"(?:frozen<)?tuple<(.*)>>?$", kind)
    if tuple_:
        # a message's tuple: its id, its sender and its content; an attachment's: name, type ...
        parts = _split(tuple_[1])
        return sum(
            value_bytes("content" if p == "text" and i == 2 else column, p, workload)
            for i, p in enumerate(parts)
        )
    if kind in FIXED:
        return FIXED[kind]
    if column == "content":
        return workload.messages.content_bytes
    return TEXT.get(column, TEXT_DEFAULT)


def row_bytes(table: Table, workload: Workload, *, skip: tuple[str, ...] = ()) -> float:
    """A row's bytes: its clustering values and regular cells (the partition key is stored once
    per partition, not per row)."""
    total = float(ROW_OVERHEAD)
    for column, kind in table.columns.items():
        if column in table.partition_key or column in skip:
            continue
        total += value_bytes(column, kind, workload) + (0 if column in table.clustering else CELL_OVERHEAD)
    return total


_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(Settings)}
_YEAR = 365 * 86400
_BUCKETS = {"year": _YEAR, "month": 30 * 86400, "day": 86400}


def bucket_days(setting: str) -> float:
    """Days one time bucket of a setting's default spans (``month``, ``day``, ``3600s`` ...)."""
    text = str(_DEFAULTS[setting])
    seconds = _BUCKETS.get(text) or int(text.rstrip("s"))
    return seconds / 86400


def buckets_kept(setting: str, w: Workload) -> float:
    return math.ceil(w.partitions.retention_years * 365 / bucket_days(setting))


NOT_WRITTEN = "no longer written (kept for older gateways)"

#: Table -> (the busiest partition, its rows). Lambdas take the workload.
Rows = Callable[[Workload], float]
SCENARIOS: dict[str, tuple[str, Rows]] = {
    "users": ("one user", lambda w: 1),
    "sessions": ("one session", lambda w: 1),
    "direct_messages": (
        "the busiest conversation's month (`GATEWAY_MESSENGER_BUCKET`)",
        lambda w: w.partitions.busiest_conversation_messages_per_day * bucket_days("messenger_bucket"),
    ),
    "direct_message_buckets": (
        "a conversation's buckets over the years kept",
        lambda w: buckets_kept("messenger_bucket", w),
    ),
    "talk_partners": ("the busiest user's partners", lambda w: w.partitions.busiest_user_partners),
    "talk_partners_by_activity": (
        "the busiest user's partners",
        lambda w: w.partitions.busiest_user_partners,
    ),
    "rooms": ("one room", lambda w: 1),
    "rooms_by_user": (NOT_WRITTEN, lambda w: 0),
    "room_messages": (
        "the busiest room's day (`GATEWAY_ROOM_BUCKET`)",
        lambda w: w.partitions.busiest_room_messages_per_day * bucket_days("room_bucket"),
    ),
    "room_message_buckets": (
        "a room's buckets over the years kept",
        lambda w: buckets_kept("room_bucket", w),
    ),
    "posts": ("one post", lambda w: 1),
    "posts_by_tag": (
        "a popular tag's month (`GATEWAY_BLOG_POST_BUCKET`)",
        lambda w: w.partitions.popular_tag_posts_per_day * bucket_days("blog_post_bucket"),
    ),
    "post_buckets_by_tag": (
        "a tag's buckets over the years kept",
        lambda w: buckets_kept("blog_post_bucket", w),
    ),
    "posts_by_author": (
        "the busiest author, every post kept (no bucket)",
        lambda w: w.partitions.busiest_author_posts_per_day * 365 * w.partitions.retention_years,
    ),
    "post_counts": ("one author", lambda w: 1),
    "comments": (
        "the busiest thread's day (`GATEWAY_BLOG_COMMENT_BUCKET`)",
        lambda w: w.partitions.busiest_thread_comments_per_day * bucket_days("blog_comment_bucket"),
    ),
    "comment_buckets": (
        "a thread's buckets over the years kept",
        lambda w: buckets_kept("blog_comment_bucket", w),
    ),
    "comment_counts": ("one thread", lambda w: 1),
    "folders_by_user": ("a user's folders (at most 100 of one's own)", lambda w: MAX_FOLDERS + 4),
    "unread_email_stats": ("a user's folders", lambda w: MAX_FOLDERS + 4),
    "emails": ("one email", lambda w: 1),
    "emails_by_user_folder": (
        "the busiest inbox's month (`GATEWAY_MAIL_BUCKET`)",
        lambda w: w.partitions.busiest_inbox_emails_per_day * bucket_days("mail_bucket"),
    ),
    "email_folder_buckets": (
        "a folder's buckets over the years kept",
        lambda w: buckets_kept("mail_bucket", w),
    ),
    "email_placements": ("one placement", lambda w: 1),
    "attachment_chunks": ("one chunk of 1000 KiB, in parts of a quarter", lambda w: CHUNK_SIZE // PART_SIZE),
    "identity_owners": ("one identity", lambda w: 1),
    "user_identities": ("a user's linked identities (at most 20)", lambda w: MAX_IDENTITIES_PER_USER),
    "contact_books": (
        f"a user's books, full, on all {len(NETWORKS)} networks",
        lambda w: MAX_CONTACTS_PER_UPLOAD * len(NETWORKS),
    ),
    "contact_index": (
        "the most widely known identity: every book that holds it",
        lambda w: w.partitions.most_shared_identity_books,
    ),
    "contact_upload_leases": ("one lease", lambda w: 1),
    "contact_fanouts": (
        f"one of {SHARDS} shards' pending fan-outs",
        lambda w: w.partitions.pending_fanouts_per_shard,
    ),
    "identity_verifications": ("a code pending for each identity", lambda w: MAX_IDENTITIES_PER_USER),
    "mutation_keys": ("one key", lambda w: 1),
    "room_participants": (
        "a room of `GATEWAY_ROOM_MAX_PARTICIPANTS`",
        lambda w: _DEFAULTS["room_max_participants"],
    ),
    "room_participant_counts": ("one room", lambda w: 1),
    "user_rooms": ("a user in the most rooms", lambda w: _DEFAULTS["rooms_per_user_max"]),
    "posts_by_author_bucket": (
        "the busiest author's year (`GATEWAY_BLOG_AUTHOR_BUCKET`)",
        lambda w: w.partitions.busiest_author_posts_per_day * bucket_days("blog_author_bucket"),
    ),
    "post_buckets_by_author": (
        "an author's buckets over the years kept",
        lambda w: buckets_kept("blog_author_bucket", w),
    ),
    "user_presence": ("one user", lambda w: 1),
}


@dataclass(frozen=True)
class Partition:
    table: str
    scenario: str
    rows: int
    bytes: int

    @property
    def within_guidance(self) -> bool:
        return self.rows <= GUIDANCE_ROWS and self.bytes <= GUIDANCE_BYTES


def largest(workload: Workload, directory: Path = CQL) -> dict[str, Partition]:
    found = tables(directory)
    missing = sorted(set(found) - set(SCENARIOS))
    if missing:
        raise KeyError(
            f"no partition scenario for the tables {', '.join(missing)} (bench/capacity/partitions.py)"
        )
    result: dict[str, Partition] = {}
    for name, table in found.items():
        scenario, rows = SCENARIOS[name]
        count = math.ceil(rows(workload))
        # rooms.participants is no longer written either (room_participants holds the members).
        size = row_bytes(table, workload, skip=("participants",) if name == "rooms" else ())
        if name == "attachment_chunks":
            size += PART_SIZE - FIXED["blob"]
        result[name] = Partition(name, scenario, count, math.ceil(count * size))
    return result


def human_bytes(size: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} B"


def cell(partition: Partition) -> str:
    """The docs' cell: rows and bytes, and a flag when over Cassandra's guidance."""
    if partition.scenario == NOT_WRITTEN:
        return "not written"
    rows = f"{partition.rows:,}".replace(",", " ")
    flag = "" if partition.within_guidance else " **over the guidance**"
    plural = "" if partition.rows == 1 else "s"
    return f"{rows} row{plural}, {human_bytes(partition.bytes)}: {partition.scenario}{flag}"
