"""The hottest partitions at 1x and 100x: a page costs the same however deep the history.

Run: ``.venv/bin/python -m bench.bench_scale [measure passes]``.

Five partitions are loaded at today's benchmark sizes (1x) and at 100x
(``bench/scale_data.py``): a conversation, an inbox, a tag, a user's talk
partners and a room's members (capped by ``GATEWAY_ROOM_MAX_PARTICIPANTS``). For each,
the first page and a page deep in the history are requested through the
gateway at both sizes, the two sizes taking turns request by request so that a
change of load on the machine hits both alike. The table gives p50/p99, CQL statements
per request, items per page, and the ratio of the 100x p99 to the 1x p99
(goal: at most 1.2, statements equal).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bench import scale_data
from bench.harness import Stats, Target, gateway_under_test
from bench.scale_data import Scene

SCALE = 100
REQUESTS = 400
WARMUP = 10
CONCURRENCY = 8
USERS = 5_000
SENDERS = 10


@dataclass(frozen=True)
class Case:
    name: str
    query: str
    scenes: dict[str, Scene]


def _connection(path: str, arguments: str, node: str) -> str:
    """``path`` opens the braces that lead to the connection field; they are closed here."""
    return (
        f"query($after: String{arguments}) {{ {path} {{ edges {{ cursor node {{ {node} }} }}"
        f" pageInfo {{ hasNextPage }} }}" + " }" * path.count("{") + " }"
    )


MESSAGES = _connection(
    "me { conversation(with: $with) { messages(first: 50, after: $after)",
    ", $with: String!",
    "id content sentAt",
)
INBOX = _connection(
    'me { folder(label: "inbox") { emails(first: 20, after: $after)',
    "",
    "id subject sentAt read hasAttachments from { login firstname }",
)
TAG = _connection(
    "posts(tag: $tag, first: 10, after: $after)",
    ", $tag: String",
    "slug title tags publishedAt author { login }",
)
PARTNERS = _connection(
    "me { talkPartners(first: 20, after: $after)",
    "",
    "partner { login firstname } lastMessage lastMessageAt unreadCount",
)
MEMBERS = _connection(
    "room(name: $n) { participants(first: 20, after: $after)", ", $n: String!", "login firstname"
)


async def load(target: Target) -> list[Case]:
    """Users, then each case at 1x and 100x (page sizes as in the queries above)."""
    users = [f"scaleu{n:04d}" for n in range(USERS)]
    senders = users[:SENDERS]
    members_100x = min(50 * SCALE, target.settings.room_max_participants)
    started = time.perf_counter()
    await scale_data.create_users(target, users)
    print(f"created {USERS} users in {time.perf_counter() - started:.0f} s", flush=True)

    loaders: list[tuple[str, str, int, Callable[[str, int], Awaitable[Scene]]]] = [
        (
            "conversation.messages",
            MESSAGES,
            1_000,
            lambda label, n: scale_data.conversation(target, label, n, 1_000, 50),
        ),
        (
            "folder(inbox).emails",
            INBOX,
            1_000,
            lambda label, n: scale_data.mailbox(target, label, n, 1_000, 20, senders),
        ),
        ("posts(tag)", TAG, 500, lambda label, n: scale_data.tag(target, label, n, 500, 10, senders)),
        (
            "me.talkPartners",
            PARTNERS,
            50,
            lambda label, n: scale_data.talk_partners(target, label, users[:n], 20),
        ),
        # The creator is a member too; 100x is capped by GATEWAY_ROOM_MAX_PARTICIPANTS.
        (
            "room.participants",
            MEMBERS,
            50,
            lambda label, n: scale_data.room(target, label, users[: min(n, members_100x) - 1], 20),
        ),
    ]
    cases: list[Case] = []
    for name, query, base, make in loaders:
        scenes: dict[str, Scene] = {}
        for label, count in (("1x", base), ("100x", base * SCALE)):
            started = time.perf_counter()
            scenes[label] = await make(label, count)
            elapsed = time.perf_counter() - started
            print(f"loaded {name} {label}: {scenes[label].items} items in {elapsed:.0f} s", flush=True)
        cases.append(Case(name, query, scenes))
    return cases


@dataclass
class Row:
    name: str
    one: Stats
    hundred: Stats
    items: tuple[int, int]


def _edges(body: dict[str, Any]) -> int:
    node: Any = body["data"]
    while "edges" not in node:
        node = next(value for value in node.values() if isinstance(value, dict))
    return len(node["edges"])


async def measure_case(target: Target, case: Case, deep: bool) -> Row:
    """Both sizes in one run, request by request in turn, so that both meet the same load."""
    labels = list(case.scenes)
    variables = {
        label: {**scene.variables, "after": scene.deep_cursor if deep else None}
        for label, scene in case.scenes.items()
    }

    async def call(label: str) -> dict[str, Any]:
        return await target.graphql(case.query, variables[label], case.scenes[label].token)

    items = {label: _edges(await call(label)) for label in labels}
    for _ in range(WARMUP):
        await asyncio.gather(*(call(label) for label in labels))
    latencies: dict[str, list[float]] = {label: [] for label in labels}
    statements: dict[str, list[int]] = {label: [] for label in labels}
    total = REQUESTS * len(labels)
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < total:
            label = labels[next_index % len(labels)]
            next_index += 1
            started = time.perf_counter()
            body = await call(label)
            latencies[label].append((time.perf_counter() - started) * 1000)
            statements[label].append(body["extensions"]["cql"]["statements"])

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    elapsed = time.perf_counter() - started
    stats = {
        label: Stats(label, REQUESTS, elapsed, latencies[label], statistics.fmean(statements[label]))
        for label in labels
    }
    page = "deep page" if deep else "first page"
    return Row(f"{case.name}, {page}", stats["1x"], stats["100x"], (items["1x"], items["100x"]))


def report(cases: list[Case], rows: list[Row]) -> None:
    print(f"\n## scale: 1x vs 100x ({REQUESTS} requests a cell, concurrency {CONCURRENCY}, times in ms)")
    for case in cases:
        print(f"  {case.name}: {case.scenes['1x'].items} vs {case.scenes['100x'].items} items")
    print(
        f"{'case':<38} {'p50 1x':>7} {'p99 1x':>7} {'CQL 1x':>7} {'p50 100x':>8} {'p99 100x':>8}"
        f" {'CQL 100x':>8} {'items':>7} {'p99 ratio':>9}"
    )
    for row in rows:
        one, hundred = row.one, row.hundred
        ratio = hundred.pct(0.99) / one.pct(0.99) if one.pct(0.99) else 0.0
        print(
            f"{row.name:<38} {one.pct(0.5):>7.2f} {one.pct(0.99):>7.2f} {one.statements:>7.2f}"
            f" {hundred.pct(0.5):>8.2f} {hundred.pct(0.99):>8.2f} {hundred.statements:>8.2f}"
            f" {row.items[0]:>3}/{row.items[1]:<3} {ratio:>9.2f}"
        )


async def main(passes: int) -> None:
    async with gateway_under_test() as target:
        cases = await load(target)
        for _ in range(passes):
            rows = [await measure_case(target, case, deep) for case in cases for deep in (False, True)]
            report(cases, rows)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
