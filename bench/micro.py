"""Microbenchmarks behind choices the code states in one line; ``bench/NOTES.md`` has the numbers.

Run: ``.venv/bin/python -m bench.micro`` for every case, or name some:
``.venv/bin/python -m bench.micro brotli crc24``. Each case times both sides of
one choice on this machine and prints one line per side. Every case but
``direct`` runs in process, with no Cassandra or Redis; ``direct`` needs the
node (``gateway cassandra start``, or ``CASSANDRA_CONTACT_POINTS``).

Times are the best of five repeats of ``timeit`` (per call), so they show what
the code costs, not what a busy machine makes of it; numbers from different
machines do not compare.
"""

from __future__ import annotations

import asyncio
import gc
import io
import json
import random
import sys
import time
import timeit
import types
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

#: Runs of ``timeit`` whose best is taken.
REPEATS = 5


def per_call(fn: Callable[[], object], number: int) -> float:
    """Microseconds per call: the best of ``REPEATS`` runs of ``number`` calls."""
    return min(timeit.repeat(fn, number=number, repeat=REPEATS)) / number * 1e6


def line(label: str, micros: float, extra: str = "") -> None:
    print(f"  {label:<58} {micros:9.2f} us{('  ' + extra) if extra else ''}")


# -- sample responses ---------------------------------------------------------------------


def _words(rng: random.Random, count: int) -> str:
    vocabulary = "tea riddle hatter cake garden queen croquet rabbit watch door key bottle".split()
    return " ".join(rng.choice(vocabulary) for _ in range(count))


def mailbox_page() -> bytes:
    """A folder's first page as the gateway answers it: 20 summaries with their senders."""
    rng = random.Random(1)
    edges = [
        {
            "cursor": "AAAAAAAMWL" + uuid.UUID(int=rng.getrandbits(128)).hex[:22],
            "node": {
                "id": str(uuid.UUID(int=rng.getrandbits(128))),
                "subject": _words(rng, 6),
                "sentAt": "2026-11-22T05:28:00.123Z",
                "read": rng.random() < 0.5,
                "hasAttachments": rng.random() < 0.2,
                "from": {"login": rng.choice(["alice", "bob", "carol", "dave", "erin"])},
            },
        }
        for _ in range(20)
    ]
    page = {"edges": edges, "pageInfo": {"hasNextPage": True, "endCursor": edges[-1]["cursor"]}}
    return json.dumps({"data": {"me": {"folder": {"label": "inbox", "emails": page}}}}).encode()


def message_page() -> bytes:
    """A conversation's page of 50 messages with their senders."""
    rng = random.Random(2)
    edges = [
        {
            "cursor": "AAAAAAAMWL" + uuid.UUID(int=rng.getrandbits(128)).hex[:22],
            "node": {
                "id": str(uuid.UUID(int=rng.getrandbits(128))),
                "content": _words(rng, 12),
                "sentAt": "2026-11-22T05:28:00.123Z",
                "sender": {"login": rng.choice(["alice", "bob"])},
            },
        }
        for _ in range(50)
    ]
    page = {"edges": edges, "pageInfo": {"hasNextPage": True}}
    return json.dumps({"data": {"me": {"conversation": {"messages": page}}}}).encode()


# -- cases ---------------------------------------------------------------------------------


def case_brotli() -> None:
    """``gateway/http/compression.py``: the brotli quality of per-request responses."""
    import brotli

    for name, body in (("mailbox page", mailbox_page()), ("50-message page", message_page())):
        print(f"  {name}: {len(body)} bytes")
        for quality in (1, 4, 5):
            size = len(brotli.compress(body, quality=quality))

            def compress(quality: int = quality, body: bytes = body) -> bytes:
                return bytes(brotli.compress(body, quality=quality))

            micros = per_call(compress, 200)
            line(f"quality {quality}", micros, f"{size} bytes")


def case_json() -> None:
    """``gateway/http/jsoncodec.py``: orjson against the standard library."""
    import orjson

    body = message_page()
    value = json.loads(body)
    line("json.dumps (compact)", per_call(lambda: json.dumps(value, separators=(",", ":")).encode(), 500))
    line("orjson.dumps", per_call(lambda: orjson.dumps(value), 500))
    line("json.loads", per_call(lambda: json.loads(body), 500))
    line("orjson.loads", per_call(lambda: orjson.loads(body), 500))


def case_datetime() -> None:
    """``gateway/graph/scalars.py``: formatting an aware UTC ``DateTime``."""
    from gateway.graph.scalars import serialize_datetime

    value = datetime(2026, 11, 22, 5, 28, 0, 123456, tzinfo=UTC)

    def isoformat_cut() -> str:
        return value.isoformat(timespec="milliseconds")[:-6] + "Z"

    assert isoformat_cut() == serialize_datetime(value)
    line("isoformat, '+00:00' cut", per_call(isoformat_cut, 100_000))
    line("serialize_datetime (from the fields)", per_call(lambda: serialize_datetime(value), 100_000))


def case_time_of() -> None:
    """``gateway/db/clock.py``: a timeuuid's moment."""
    from cassandra.util import datetime_from_uuid1

    from gateway.db.clock import new_timeuuid, time_of

    item = new_timeuuid()
    line("driver: datetime_from_uuid1", per_call(lambda: datetime_from_uuid1(item), 100_000))
    line("clock.time_of (integer arithmetic)", per_call(lambda: time_of(item), 100_000))


def case_access_line() -> None:
    """``gateway/graph/observability.py``, ``gateway/server/logs.py``: one JSON access line."""
    import logging

    from gateway.graph import observability
    from gateway.server.logs import JsonFormatter, JsonLines, RequestContext

    class StdlibJson(JsonFormatter):
        def format(self, record: logging.LogRecord) -> str:
            entry: dict[str, Any] = {
                "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
                "level": record.levelname,
                "logger": record.name,
                "message": record.getMessage(),
            }
            entry.update((k, v) for k, v in vars(record).items() if k in EXTRA)
            return json.dumps(entry, default=str, ensure_ascii=False)

    EXTRA = ("requestId", "operation", "operationType", "transport", "user", "durationMs", "statements")
    extra: dict[str, object] = {"requestId": "r-1", "operation": "Conversation", "operationType": "query"}
    extra |= {"transport": "http"}
    extra |= {"user": "alice", "durationMs": 3.2, "statements": 4}
    access = observability.access_log
    saved = (access.handlers[:], access.propagate, access.level)
    handler = logging.StreamHandler(io.StringIO())
    handler.addFilter(RequestContext())
    access.handlers[:], access.propagate = [handler], False
    access.setLevel(logging.INFO)

    class Context:
        login = "alice"
        websocket = False

    record_line = observability._Line(Context(), "query", "Conversation", "ok", False, 4, 0, "r-1", [])
    fmt = "%s %s %s %.1fms statements=%d user=%s requestId=%s"
    try:
        handler.setFormatter(StdlibJson())
        line(
            "logger.info, json.dumps, isoformat",
            per_call(
                lambda: access.info(fmt, "query", "Conversation", "ok", 3.2, 4, "alice", "r-1", extra=extra),
                20_000,
            ),
        )
        handler.setFormatter(JsonFormatter())
        line(
            "makeRecord + handle, orjson, the second kept", per_call(lambda: record_line._log(0.0032), 20_000)
        )
        access.handlers[:] = [JsonLines(io.StringIO())]
        line("the JSON handler writes it from its fields", per_call(lambda: record_line._log(0.0032), 20_000))
    finally:
        access.handlers[:], access.propagate = saved[0], saved[1]
        access.setLevel(saved[2])


def case_crc24() -> None:
    """``gateway/db/segments.py``: the CRC-24 of a segment header."""
    from cassandra.segment import compute_crc24

    from gateway.db.segments import crc24

    header = 0x02_00C8
    assert crc24(header, 3) == compute_crc24(header, 3)
    line("driver: compute_crc24 (a bit at a time)", per_call(lambda: compute_crc24(header, 3), 100_000))
    line("segments.crc24 (a byte at a time)", per_call(lambda: crc24(header, 3), 100_000))


def case_segments() -> None:
    """``gateway/db/segments.py``: encoding and decoding an uncompressed segment."""
    from cassandra.segment import SegmentCodec

    from gateway.db.segments import SEGMENT_CODEC

    message = bytes(200)
    for name, codec in (("driver: SegmentCodec", SegmentCodec()), ("segments.SEGMENT_CODEC", SEGMENT_CODEC)):

        def encode(codec: Any = codec) -> bytes:
            buffer = io.BytesIO()
            codec.encode(buffer, message)
            return buffer.getvalue()

        wire = encode()

        def decode(codec: Any = codec, wire: bytes = wire) -> object:
            buffer = io.BytesIO(wire)
            return codec.decode(buffer, codec.decode_header(buffer))

        line(f"{name}: encode a 200-byte segment", per_call(encode, 50_000))
        line(f"{name}: decode it", per_call(decode, 50_000))


def case_gathered() -> None:
    """``gateway/db/session.py``: a DataLoader batch of one read, with and without a task."""
    import uvloop

    from gateway.db.session import gathered

    async def read() -> int:
        return 1

    async def measure(batch: Callable[[], Awaitable[object]], number: int) -> float:
        best = float("inf")
        for _ in range(REPEATS):
            start = time.perf_counter()
            for _ in range(number):
                await batch()
            best = min(best, time.perf_counter() - start)
        return best / number * 1e6

    async def main() -> None:
        line("asyncio.gather of one", await measure(lambda: asyncio.gather(read()), 20_000))
        line("session.gathered of one (awaited as it is)", await measure(lambda: gathered([read()]), 20_000))

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())


def case_body_read() -> None:
    """``gateway/http/requests.py``: reading a 200-byte JSON body that came with its head."""
    import uvloop
    from aiohttp import StreamReader
    from aiohttp.base_protocol import BaseProtocol

    from gateway.http.requests import read_body, within

    body = b'{"query": "query($l: String!) { user(login: $l) { login firstname } }"' + b" " * 120 + b"}"

    async def each_piece_timed(content: StreamReader) -> bytes:
        read = bytearray()
        while piece := await within(5.0, content.readany()):
            read += piece
        return bytes(read)

    async def measure(read: Callable[[StreamReader], Awaitable[bytes]], number: int) -> float:
        loop = asyncio.get_running_loop()
        protocol = BaseProtocol(loop)
        best = float("inf")
        for _ in range(REPEATS):
            readers = []
            for _ in range(number):
                content = StreamReader(protocol, 2**16, loop=loop)
                content.feed_data(body)
                content.feed_eof()
                readers.append(content)
            start = time.perf_counter()
            for content in readers:
                await read(content)
            best = min(best, time.perf_counter() - start)
        return best / number * 1e6

    async def main() -> None:
        line("readany under asyncio.timeout, until it is empty", await measure(each_piece_timed, 20_000))
        line(
            "what has arrived, then a timed wait only for more",
            await measure(lambda content: read_body(content, 2**20, 5.0), 20_000),
        )

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())


def case_dict_display() -> None:
    """``gateway/graph/plain_fields.py``: building a plain object of six fields."""
    from operator import attrgetter

    from gateway.graph.plain_fields import _dict_builder

    names = ("id", "login", "firstname", "lastname", "bio", "created")
    fields: list[tuple[str, Callable[[Any], Any]]] = [(name, attrgetter(name)) for name in names]
    value = types.SimpleNamespace(**{name: name.upper() for name in names})
    build = _dict_builder(fields)

    def comprehension() -> dict[str, Any]:
        return {key: produce(value) for key, produce in fields}

    assert comprehension() == build(value)
    line("comprehension over (key, producer) pairs", per_call(comprehension, 100_000))
    line("_dict_builder's dict display", per_call(lambda: build(value), 100_000))


def _schema() -> Any:
    from gateway.schema import build_schema
    from gateway.settings import Settings

    return build_schema(Settings())


def case_introspection() -> None:
    """``gateway/graph/plain_fields.py``: GraphiQL's introspection query, held on one thread."""
    from graphql import execute_sync, get_introspection_query, parse

    schema = _schema()._schema
    document = parse(
        get_introspection_query(
            descriptions=True,
            specified_by_url=True,
            directive_is_repeatable=True,
            schema_description=True,
            input_value_deprecation=True,
        )
    )
    assert not execute_sync(schema, document).errors
    line("GraphiQL's introspection query", per_call(lambda: execute_sync(schema, document), 20))


def case_hooks() -> None:
    """``gateway/graph/hooks.py``: ``{ __typename }`` with the gateway's extensions."""
    import strawberry

    schema = _schema()
    stock = _schema()
    stock.create_extensions_runner = types.MethodType(strawberry.Schema.create_extensions_runner, stock)

    async def measure(target: Any, number: int) -> float:
        best = float("inf")
        for _ in range(REPEATS):
            start = time.perf_counter()
            for _ in range(number):
                result = await target.execute("{ __typename }")
            best = min(best, time.perf_counter() - start)
        assert not result.errors
        return best / number * 1e6

    async def main() -> None:
        line("Strawberry's extensions runner", await measure(stock, 5_000))
        line("hooks.HookRunner", await measure(schema, 5_000))

    asyncio.run(main())


def _lean_page_query() -> type:
    """A query type for ``lean_resolvers``: its annotations are resolved in this module's
    namespace (Strawberry looks names up there), so the types are put there."""
    import strawberry
    from strawberry.types import Info

    globals()["Info"] = Info

    @strawberry.type
    class LeanItem:
        name: str

        @strawberry.field
        def echo(self, text: str | None = None) -> str:
            return self.name

        @strawberry.field
        async def later(self, info: Info) -> str:
            return self.name

    globals()["LeanItem"] = LeanItem

    @strawberry.type
    class LeanQuery:
        @strawberry.field
        async def items(self, first: int = 50, after: str | None = None) -> list[LeanItem]:
            return [LeanItem(name=str(n)) for n in range(first)]

    return LeanQuery


def case_lean_resolvers() -> None:
    """``gateway/graph/executor_internals.py`` ``lean_resolver``: a page of 50 items, each with
    a resolver taking an argument and an async one taking ``info``."""
    import strawberry

    from gateway.graph.plain_fields import PlainFieldsExecutor, install_lean_resolvers

    query = _lean_page_query()
    stock = strawberry.Schema(query=query, execution_context_class=PlainFieldsExecutor)
    lean = strawberry.Schema(query=query, execution_context_class=PlainFieldsExecutor)
    install_lean_resolvers(lean)
    document = '{ items(first: 50) { name echo(text: "t") later } }'

    async def measure(target: strawberry.Schema, number: int) -> float:
        best = float("inf")
        for _ in range(REPEATS):
            start = time.perf_counter()
            for _ in range(number):
                result = await target.execute(document)
            best = min(best, time.perf_counter() - start)
        assert not result.errors, result.errors
        return best / number * 1e6

    async def main() -> None:
        line("Strawberry's resolvers (a page)", await measure(stock, 300))
        line("lean resolvers (a page)", await measure(lean, 300))

    asyncio.run(main())


def case_gc() -> None:
    """``gateway/server/serve.py``: a full collection of a ready process, before and after the freeze."""
    import gateway.server.app  # noqa: F401  # everything a serving process imports

    schema = _schema()

    def full() -> float:
        start = time.perf_counter()
        gc.collect()
        return (time.perf_counter() - start) * 1e6

    line(f"gc.collect() over {len(gc.get_objects())} tracked objects", min(full() for _ in range(REPEATS)))
    gc.freeze()
    line(f"gc.collect() with {gc.get_freeze_count()} frozen", min(full() for _ in range(REPEATS)))
    gc.unfreeze()
    del schema


def case_direct() -> None:
    """``gateway/db/direct.py``: a read by key, the driver's way and the direct way (needs the node)."""
    import uvloop

    from gateway.db.session import Database
    from gateway.settings import Settings

    cql = "SELECT release_version FROM system.local WHERE key = ?"
    reads = 2000

    async def cpu_per_read(db: Database) -> float:
        best = float("inf")
        for _ in range(REPEATS):
            start = time.process_time()
            for _ in range(reads):
                await db.execute(cql, ("local",))
            best = min(best, time.process_time() - start)
        return best / reads * 1e6

    async def main() -> None:
        db = Database(Settings.from_env())
        await db.open()
        try:
            await db.execute(cql, ("local",))
            direct = db._direct
            line("direct read: CPU per statement, both threads", await cpu_per_read(db))
            db._direct = None
            line("driver's ResponseFuture: CPU per statement", await cpu_per_read(db))
            db._direct = direct
        finally:
            await asyncio.to_thread(db.shutdown)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())


CASES: dict[str, Callable[[], None]] = {
    "brotli": case_brotli,
    "json": case_json,
    "datetime": case_datetime,
    "time_of": case_time_of,
    "access_line": case_access_line,
    "crc24": case_crc24,
    "segments": case_segments,
    "gathered": case_gathered,
    "body_read": case_body_read,
    "dict_display": case_dict_display,
    "introspection": case_introspection,
    "hooks": case_hooks,
    "lean_resolvers": case_lean_resolvers,
    "gc": case_gc,
    "direct": case_direct,
}


def main(names: list[str]) -> None:
    unknown = [name for name in names if name not in CASES]
    if unknown:
        raise SystemExit(f"unknown case {', '.join(unknown)}; cases: {', '.join(CASES)}")
    for name in names or list(CASES):
        case = CASES[name]
        print(f"{name}: {(case.__doc__ or '').strip()}")
        case()


if __name__ == "__main__":
    main(sys.argv[1:])
