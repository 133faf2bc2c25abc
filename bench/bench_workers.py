"""Workers: the canonical read, ``user(login)``, at ``--workers 1`` and ``--workers 2``, same run.

Each case runs ``gateway serve --workers N`` as an operator would (the 2-worker
case with a Redis broker of its own), over one throwaway keyspace, and drives it
from this process over ``CONNECTIONS`` keep-alive connections, which the kernel
spreads over the workers. The load generator shares the machine's cores with the
gateway: on a small machine it caps what the second worker can show.

Run: ``.venv/bin/python -m bench.bench_workers`` (or ``scripts/bench workers``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp

from bench.harness import Stats, Target, _free_port, measure, report, serving
from gateway.db.migrations import drop_keyspace
from gateway.db.session import Database
from gateway.settings import Settings
from gateway.settings.tooling import ToolingSettings

REQUESTS = 4000
CONNECTIONS = 64
READ = '{ user(login: "benchuser") { login firstname } }'


#: The bearer token of the gateways' ``/metrics``: a process named a contact point is a real
#: cluster's, whose ``/metrics`` answers only with one.
METRICS_TOKEN = "bench-metrics-" + "m" * 32


def _env(settings: Settings, port: int, broker_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "CASSANDRA_CONTACT_POINTS": ",".join(settings.contact_points) or "127.0.0.1",
        "CASSANDRA_PORT": str(settings.cassandra_port),
        "CASSANDRA_KEYSPACE": settings.keyspace,
        "CASSANDRA_REPLICATION": settings.replication,
        "GATEWAY_PORT": str(port),
        "GATEWAY_BROKER_URL": broker_url,
        "GATEWAY_QUERY_METRICS": "1",
        "GATEWAY_LOG_LEVEL": "WARNING",
        "GATEWAY_ARGON2_TIME_COST": "1",
        "GATEWAY_ARGON2_MEMORY_COST_KIB": "8192",
        "GATEWAY_ARGON2_PARALLELISM": "1",
        # Its own keyspace, so any pepper does (a real cluster refuses the public default).
        "GATEWAY_CONTACTS_IDENTITY_PEPPER": os.environ.get("GATEWAY_CONTACTS_IDENTITY_PEPPER")
        or "bench-pepper-" + "p" * 32,
        # Workers must share one download-signing key.
        "GATEWAY_URL_SIGNING_SECRET": os.environ.get("GATEWAY_URL_SIGNING_SECRET") or "bench-" + "s" * 32,
        # A real cluster needs a sender of verification codes; the benchmarks ask for none.
        "GATEWAY_VERIFICATION_WEBHOOK_URL": os.environ.get("GATEWAY_VERIFICATION_WEBHOOK_URL")
        or "http://127.0.0.1:9/codes",
        "GATEWAY_METRICS_TOKEN": METRICS_TOKEN,
    }


async def _ready_workers(http: aiohttp.ClientSession, base: str, workers: int) -> None:
    """Until ``workers`` distinct processes answered ``/readyz`` 200 on fresh connections."""
    pids: set[int] = set()
    for _ in range(2400):
        try:
            async with http.get(f"{base}/readyz", headers={"Connection": "close"}) as response:
                if response.status == 200:
                    pids.add((await response.json())["pid"])
        except aiohttp.ClientError:
            pass
        if len(pids) == workers:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"only {len(pids)} of {workers} workers became ready")


async def _case(settings: Settings, db: Database, workers: int, broker_url: str) -> Stats:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "serve", "--workers", str(workers),
        env=_env(settings, port, broker_url),
    )  # fmt: skip
    connector = aiohttp.TCPConnector(limit=CONNECTIONS)
    try:
        with serving(process.pid):
            async with aiohttp.ClientSession(connector=connector) as http:
                await _ready_workers(http, base, workers)
                target = Target(f"{base}/graphql", http, db, settings)
                try:
                    if workers == 1:
                        await target.sign_up("benchuser")
                    return await measure(
                        f"gateway --workers {workers}: user(login)",
                        lambda _: target.graphql(READ),
                        requests=REQUESTS,
                        concurrency=CONNECTIONS,
                        warmup=CONNECTIONS * 2,
                    )
                finally:
                    target.client.close()
    finally:
        process.send_signal(signal.SIGTERM)
        await process.wait()


async def main() -> None:
    from devnode.cassandra import CassandraNode
    from devnode.redis import RedisServer

    settings = replace(Settings.from_env(), keyspace=f"bench_{uuid.uuid4().hex[:10]}")
    if settings.embedded:
        await asyncio.to_thread(CassandraNode(ToolingSettings.from_env(), settings.cassandra_port).start)
    home = Path(tempfile.mkdtemp(prefix="bench-redis-"))
    redis = RedisServer(
        ToolingSettings(cassandra_home=home, redis_port=_free_port()), progress=lambda _: None
    )
    await asyncio.to_thread(redis.start)
    db = Database(settings)
    rows: list[Any] = []
    try:
        rows.append(await _case(settings, db, 1, ""))
        rows.append(await _case(settings, db, 2, redis.url))
    finally:
        await asyncio.to_thread(redis.stop)
        await asyncio.to_thread(db.connect)
        await asyncio.to_thread(drop_keyspace, db, settings.keyspace)
        await asyncio.to_thread(db.shutdown)
    cores = os.cpu_count()
    report(f"workers ({REQUESTS} requests over {CONNECTIONS} connections, {cores} cores)", rows)


if __name__ == "__main__":
    asyncio.run(main())
