"""The hottest partitions at 1x and 100x: a page costs the same however deep the history.

A conversation of 1 000 messages (today's messenger benchmark) and one of
100 000, spread over 100 monthly buckets, are loaded with the store's own
statements (the message insert and the bucket index write) at high
concurrency. For each size the first page of ``conversation.messages`` and a
page deep in the history (a cursor built for a message near the oldest end)
are measured side by side: p50/p99, CQL statements per request, and the ratio
of the 100x p99 to the 1x p99 (goal: at most 1.2, statements equal).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.harness import Stats, Target, gateway_under_test, measure
from gateway.db import clock
from gateway.db.timeline import Position, bucket_of
from gateway.graph.pagination import position_cursor
from gateway.messenger.model import conversation_id

BASE = 1_000
SCALE = 100
MONTHS = 100
LOAD_CONCURRENCY = 256
REQUESTS = 300
CONCURRENCY = 8

_INSERT = (
    "INSERT INTO direct_messages (conversation_id, bucket, message_id, sender, recipient,"
    " content, client_message_id) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_BUCKET = "INSERT INTO direct_message_buckets (conversation_id, bucket) VALUES (?, ?)"

MESSAGES = """query($with: String!, $after: String) { me { conversation(with: $with) {
  messages(first: 50, after: $after) { edges { cursor node { id content sentAt } } pageInfo { hasNextPage } }
} } }"""


async def load_conversation(target: Target, a: str, b: str, count: int) -> Position:
    """``count`` messages between ``a`` and ``b`` over ``MONTHS`` months; the position of
    the tenth-oldest message (a cursor there reads a page deep in the history)."""
    conversation = conversation_id(a, b)
    start = datetime.now(UTC) - timedelta(days=31 * MONTHS)
    step = timedelta(days=31 * MONTHS) / count
    gate = asyncio.Semaphore(LOAD_CONCURRENCY)
    buckets: set[int] = set()
    deep: Position | None = None

    async def one(n: int) -> None:
        nonlocal deep
        moment = start + step * n
        message_id = clock.new_timeuuid(int(moment.timestamp() * 1e9))
        bucket = bucket_of(clock.time_of(message_id), "month")
        buckets.add(bucket)
        if n == 10:
            deep = Position(bucket, message_id)
        async with gate:
            await target.db.execute(_INSERT, (conversation, bucket, message_id, a, b, f"message {n}", ""))

    await asyncio.gather(*(one(n) for n in range(count)))
    await asyncio.gather(*(target.db.execute(_BUCKET, (conversation, bucket)) for bucket in buckets))
    assert deep is not None
    return deep


async def main() -> None:
    async with gateway_under_test() as target:
        rows: list[tuple[str, Stats, Stats]] = []
        cases: dict[str, tuple[str, str, str]] = {}
        for label, count in (("1x", BASE), ("100x", BASE * SCALE)):
            a, b = f"scale{label}a", f"scale{label}b"
            token = await target.sign_up(a)
            await target.sign_up(b)
            started = asyncio.get_running_loop().time()
            deep = await load_conversation(target, a, b, count)
            print(f"loaded {count} messages in {asyncio.get_running_loop().time() - started:.0f} s")
            cases[label] = (token, b, position_cursor(deep))
        for name, deep_page in (("conversation.messages, first page", False), ("... a page deep", True)):
            measured = []
            for label in ("1x", "100x"):
                token, partner, cursor = cases[label]
                after = cursor if deep_page else None

                async def call(
                    _: int, token: str = token, partner: str = partner, after: str | None = after
                ) -> dict[str, Any]:
                    return await target.graphql(MESSAGES, {"with": partner, "after": after}, token)

                stats = await measure(f"{name} {label}", call, requests=REQUESTS, concurrency=CONCURRENCY)
                measured.append(stats)
            rows.append((name, measured[0], measured[1]))
        print("\n## scale: 1x vs 100x (messages per conversation: 1 000 vs 100 000)")
        print(
            f"{'case':<38} {'p50 1x':>8} {'p99 1x':>8} {'CQL 1x':>7} {'p50 100x':>9} {'p99 100x':>9}"
            f" {'CQL 100x':>9} {'p99 ratio':>10}"
        )
        for name, one, hundred in rows:
            ratio = hundred.pct(0.99) / one.pct(0.99) if one.pct(0.99) else 0.0
            print(
                f"{name:<38} {one.pct(0.5):>8.2f} {one.pct(0.99):>8.2f} {one.statements:>7.2f}"
                f" {hundred.pct(0.5):>9.2f} {hundred.pct(0.99):>9.2f} {hundred.statements:>9.2f}"
                f" {ratio:>10.2f}"
            )


if __name__ == "__main__":
    asyncio.run(main())
