"""What one anonymous request of at most 16 KB can make the gateway answer, and for how long
it holds the event loop.

Each probe is a hostile request an anonymous client could send (no token), kept under
16 KB: aliased introspection in a batch, aliased pages of the longest texts the schema
holds (posts of 100 000 characters, published beforehand by a signed-up user, as an
attacker could), and nested connections. For each it prints the request's size, the
response's status, size and time, and the longest wait of a ``{ __typename }`` sent every
2 ms beside it (the loop stall a bystander saw). ``python -m bench.bench_amplification``
runs it against a fresh gateway; the largest response and the longest stall end the table.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from bench.harness import Target, gateway_under_test

LIMIT = 16 * 1024
#: The default alias limit: a document with more is refused before anything else.
ALIASES = 30
INTROSPECTION = "__schema { types { name fields { name args { name } type { name } } } }"
FULL_TYPE = (
    "__schema { types { kind name description fields(includeDeprecated: true) { name description"
    " args { name description type { kind name ofType { kind name ofType { kind name } } }"
    " defaultValue } type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }"
    " isDeprecated deprecationReason } inputFields { name type { kind name } } enumValues { name } } }"
)
BODIES = "posts(first: 100) { nodes { body title } }"
NESTED = "rooms(first: 100) { nodes { name participants(first: 100) { nodes { login bio } } } }"


@dataclass
class Outcome:
    name: str
    request_bytes: int
    status: int
    response_bytes: int
    seconds: float
    stall_ms: float
    codes: list[str]


def aliased(selection: str, count: int) -> str:
    return "query { " + " ".join(f"a{n}: {selection}" for n in range(count)) + " }"


def fitted(make: Any, limit: int = LIMIT) -> bytes:
    """The largest request ``make(n)`` builds (for n = 1, 2, ...) that fits ``limit`` bytes."""
    best = json.dumps(make(1)).encode()
    for count in range(2, ALIASES + 1):
        body = json.dumps(make(count)).encode()
        if len(body) > limit:
            break
        best = body
    return best


def probes() -> list[tuple[str, bytes]]:
    return [
        (
            "batch of 10, aliased introspection",
            fitted(lambda n: [{"query": aliased(INTROSPECTION, n)}] * 10),
        ),
        ("one document, aliased full introspection", fitted(lambda n: {"query": aliased(FULL_TYPE, n)})),
        ("aliased pages of 100 long posts", fitted(lambda n: {"query": aliased(BODIES, n)})),
        ("batch of 10, aliased long posts", fitted(lambda n: [{"query": aliased(BODIES, n)}] * 10)),
        ("aliased nested rooms and participants", fitted(lambda n: {"query": aliased(NESTED, n)})),
        # The most of each that the default cost limit admits:
        ("nine full introspections", json.dumps({"query": aliased(FULL_TYPE, 9)}).encode()),
        ("one page of 100 long posts", json.dumps({"query": aliased(BODIES, 1)}).encode()),
        ("two pages of 100 long posts", json.dumps({"query": aliased(BODIES, 2)}).encode()),
    ]


async def publish_long_posts(target: Target, count: int) -> None:
    """What an attacker prepares once: posts of the longest body the contract allows."""
    token = await target.sign_up("longposts")
    body = "x" * 100_000
    for n in range(count):
        await target.graphql(
            "mutation($i: PostInput!) { publishPost(input: $i) { slug } }",
            {"i": {"slug": f"long-{n}", "title": f"Long {n}", "body": body, "tags": ["long"]}},
            token,
        )


async def probe(target: Target, name: str, body: bytes) -> Outcome:
    stop = asyncio.Event()
    waits: list[float] = []

    async def bystander() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            async with target.http.get(target.url, params={"query": "{ __typename }"}) as answer:
                await answer.read()
            waits.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.002)

    watching = asyncio.create_task(bystander())
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
    async with target.http.post(target.url, data=body, headers=headers) as answer:
        raw = await answer.read()
        status = answer.status
    seconds = time.perf_counter() - started
    stop.set()
    await watching
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = {}
    results = parsed if isinstance(parsed, list) else [parsed]
    codes = sorted({e.get("extensions", {}).get("code", "?") for r in results for e in r.get("errors") or []})
    return Outcome(name, len(body), status, len(raw), seconds, max(waits, default=0.0), codes)


async def main() -> None:
    async with gateway_under_test() as target:
        await publish_long_posts(target, 100)
        outcomes = [await probe(target, name, body) for name, body in probes()]
    print(f"{'probe':42} {'request':>8} {'status':>6} {'response':>12} {'seconds':>8} {'stall ms':>9}  codes")
    for o in outcomes:
        print(
            f"{o.name:42} {o.request_bytes:>8} {o.status:>6} {o.response_bytes:>12} {o.seconds:>8.2f}"
            f" {o.stall_ms:>9.1f}  {','.join(o.codes) or '-'}"
        )
    largest = max(outcomes, key=lambda o: o.response_bytes)
    stalled = max(outcomes, key=lambda o: o.stall_ms)
    print(f"largest response: {largest.response_bytes} bytes in {largest.seconds:.2f} s ({largest.name})")
    print(f"longest stall of a bystander: {stalled.stall_ms:.1f} ms ({stalled.name})")


if __name__ == "__main__":
    asyncio.run(main())
