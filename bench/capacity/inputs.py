"""The model's inputs: the rows ``scripts/bench --json`` wrote, picked by case name.

``inputs.json`` is two such documents side by side (``requests``: the request benchmarks;
``live``: the delivery benchmark), each with the command that measured it and when
(``scripts/capacity measure`` writes it). Nothing here is typed in: every figure comes out of
a row, and a row that is missing is an error naming the command that would have written it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_INPUTS = HERE / "inputs.json"
DEFAULT_WORKLOAD = HERE / "ebuddy.toml"

REQUESTS_COMMAND = "scripts/bench --json {file} messenger rooms contacts"
LIVE_COMMAND = (
    "scripts/bench --json {file} live -- --sizes 1000 --rates 5 --pairs 100 --pair-rates 20"
    " --workers 1,2 --duration 10 --grace 10"
)


class InputError(ValueError):
    """The inputs file lacks a figure the model needs."""


@dataclass(frozen=True)
class Operation:
    """What one request of an operation cost, from its gateway row (and, for the lightweight
    transactions, its driver row: the same CQL, counted in the benchmark's process)."""

    name: str
    case: str
    gateway_cpu_ms: float
    node_cpu_ms: float
    statements: float
    lwts: float
    writes: bool


@dataclass(frozen=True)
class Delivery:
    """What one delivery over a live subscription cost, from the delivery benchmark."""

    case: str
    gateway_cpu_us: float
    node_cpu_us: float
    cql: float
    #: Gateway CPU per message for every process past the first (each executes the event
    #: once for its own sockets), from the same room at two processes.
    per_process_message_us: float
    room_size: int


@dataclass(frozen=True)
class Inputs:
    operations: dict[str, Operation]
    delivery: Delivery
    #: Redis CPU per direct message at two processes (the publish, its fan-out to the processes
    #: and whatever else the send asks of Redis), from the pairs case.
    redis_cpu_us_per_send: float
    redis_case: str
    rss_kib_per_socket: float
    #: The node's CPU per statement over every gateway case of the request benchmarks.
    node_cpu_us_per_statement: float
    commands: dict[str, str]
    measured_at: dict[str, str]


#: Operation -> (the gateway case's name starts with, whether it writes).
OPERATIONS: dict[str, tuple[str, bool]] = {
    "send": ("gateway: sendMessage, spread over recipients", True),
    "conversation": ("gateway: me.conversation.messages(first: 50)", False),
    "talk_partners": ("gateway: me.talkPartners(first: 50), page 1", False),
    "room_post": ("gateway: postRoomMessage", True),
    "room_history": ("gateway: room.messages(first: 50)", False),
    "contact_upload": ("gateway: uploadContacts, fresh", True),
}


def load(path: Path = DEFAULT_INPUTS) -> Inputs:
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: no inputs file; `scripts/capacity measure` writes one") from None
    return parse(document)


def parse(document: dict[str, Any]) -> Inputs:
    for part in ("requests", "live"):
        if not isinstance(document.get(part), dict) or not isinstance(document[part].get("rows"), list):
            raise InputError(f"inputs: no '{part}' rows (`scripts/capacity measure` writes them)")
    requests: list[dict[str, Any]] = document["requests"]["rows"]
    live: list[dict[str, Any]] = document["live"]["rows"]
    # The node is shared: its CPU over the cases, divided by every CQL request it served
    # meanwhile (every client's), is what a statement costs it.
    counted = [r for r in requests if r.get("node_requests")]
    served = sum(r["node_requests"] for r in counted)
    node_cpu = sum(_number(r, "node_cpu") for r in counted)
    if not served or not node_cpu:
        raise InputError(
            "inputs: the request rows carry no node CPU and requests (was the node on this machine?)"
        )
    per_statement_us = node_cpu * 1e6 / served
    operations = {
        name: _operation(requests, name, *case, per_statement_us=per_statement_us)
        for name, case in OPERATIONS.items()
    }
    room = _live(
        live, "the room case at one process", lambda r: r["scenario"] == "room" and r["workers"] == 1
    )
    room2 = _live(
        live,
        f"the room of {room['size']} at two processes",
        lambda r: r["scenario"] == "room" and r["workers"] == 2 and r["size"] == room["size"],
    )
    pairs2 = _live(
        live, "the pairs case at two processes", lambda r: r["scenario"] == "pairs" and r["workers"] == 2
    )
    post_ms = operations["room_post"].gateway_cpu_ms
    # A room case's gateway CPU includes its posts: take the post off each delivery's share.
    per_delivery_us = max(0.0, _number(room, "gateway_cpu_per_1000") * 1000 - post_ms * 1000 / room["size"])
    per_delivery_us2 = max(0.0, _number(room2, "gateway_cpu_per_1000") * 1000 - post_ms * 1000 / room["size"])
    delivery = Delivery(
        case=room["name"],
        gateway_cpu_us=per_delivery_us,
        node_cpu_us=(room.get("cql_per_delivery") or 0.0) * per_statement_us,
        cql=room.get("cql_per_delivery") or 0.0,
        per_process_message_us=max(0.0, (per_delivery_us2 - per_delivery_us) * room["size"]),
        room_size=int(room["size"]),
    )
    sockets = [r["rss_per_socket_kib"] for r in live if r.get("rss_per_socket_kib")]
    return Inputs(
        operations=operations,
        delivery=delivery,
        redis_cpu_us_per_send=_number(pairs2, "redis_cpu") * 1e6 / pairs2["sent"] if pairs2["sent"] else 0.0,
        redis_case=pairs2["name"],
        rss_kib_per_socket=sum(sockets) / len(sockets) if sockets else 0.0,
        node_cpu_us_per_statement=per_statement_us,
        commands={part: str(document[part].get("command", "")) for part in ("requests", "live")},
        measured_at={part: str(document[part].get("measured_at", "")) for part in ("requests", "live")},
    )


def _number(row: dict[str, Any], key: str) -> float:
    value = row.get(key)
    if not isinstance(value, int | float):
        raise InputError(f"inputs: {row.get('name')!r} has no number {key!r}")
    return float(value)


#: What a lightweight transaction costs the node beside a plain statement: Paxos's prepare,
#: read and propose before the commit, which is the write itself.
LWT_STATEMENTS = 4


def _operation(
    rows: list[dict[str, Any]], name: str, case: str, writes: bool, *, per_statement_us: float
) -> Operation:
    for index, row in enumerate(rows):
        if row["name"].startswith(case):
            # The driver row doing the same CQL: the next of the report, else the one before
            # (the last gateway case of a report may have none of its own).
            drivers = [
                (j <= index, abs(j - index), other)
                for j, other in enumerate(rows)
                if other["report"] == row["report"] and other["name"].startswith("driver")
            ]
            driver = min(drivers, key=lambda d: d[:2])[2] if drivers else None
            statements = _number(row, "statements")
            lwts = float(driver.get("lwts") or 0.0) if driver else 0.0
            return Operation(
                name=name,
                case=row["name"],
                gateway_cpu_ms=_number(row, "cpu_per_1000"),
                node_cpu_ms=(statements + (LWT_STATEMENTS - 1) * lwts) * per_statement_us / 1000,
                statements=statements,
                lwts=lwts,
                writes=writes,
            )
    raise InputError(
        f"inputs: no row {case!r} for {name} (`{REQUESTS_COMMAND.format(file='FILE')}` writes it)"
    )


def _live(rows: list[dict[str, Any]], what: str, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    found = [r for r in rows if r.get("report") == "live delivery" and match(r)]
    if not found:
        raise InputError(f"inputs: no live row for {what} (`{LIVE_COMMAND.format(file='FILE')}` writes it)")
    return max(found, key=lambda r: r["size"])
