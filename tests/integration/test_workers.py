"""``gateway serve --workers N``: real worker processes on one port, under a supervising parent."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from devnode.common import pid_alive
from devnode.redis import RedisServer
from gateway.settings import Settings
from tests.support.cli import run_cli
from tests.support.processes import Gateway, start_gateway
from tests.support.redis_helpers import WAIT, private_redis

__all__ = ["private_redis"]


async def _worker_pids(gateway: Gateway, count: int) -> set[int]:
    """The pids answering ``/readyz`` on the shared port, over fresh connections, until
    ``count`` distinct ones answered (the kernel spreads connections by their address)."""
    pids: set[int] = set()
    for _ in range(WAIT * 20):
        connector = aiohttp.TCPConnector(force_close=True)
        async with (
            aiohttp.ClientSession(connector=connector) as http,
            http.get(f"{gateway.api.base_url}/readyz") as response,
        ):
            body = await response.json()
            if response.status == 200:
                pids.add(body["pid"])
        if len(pids) == count:
            return pids
        await asyncio.sleep(0.05)
    raise AssertionError(f"only {pids} answered on port {gateway.port}")


async def _gone(pids: set[int]) -> None:
    for _ in range(WAIT * 20):
        if not any(pid_alive(pid) for pid in pids):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"workers still running: {[p for p in pids if pid_alive(p)]}")


@pytest.fixture
async def two_workers(
    base_settings: Settings, server: Any, private_redis: RedisServer, tmp_path: Path
) -> Any:
    gateway = await start_gateway(
        base_settings, tmp_path, "--workers", "2", GATEWAY_BROKER_URL=private_redis.url
    )
    yield gateway
    if gateway.process.returncode is None:
        gateway.process.kill()
        await gateway.process.wait()


async def _settled_heaps(gateway: Gateway, count: int) -> list[str]:
    """The lines of ``gateway.server.serve.settle_heap_when_ready``, once ``count`` processes logged one."""
    for _ in range(WAIT * 20):
        lines = [line for line in gateway.output().splitlines() if "frozen out of garbage collection" in line]
        if len(lines) >= count:
            return lines
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {count} processes settled their heap:\n{gateway.output()}")


async def test_two_workers_serve_one_port_and_stop_on_sigterm(two_workers: Gateway) -> None:
    pids = await _worker_pids(two_workers, 2)
    assert two_workers.process.pid not in pids
    # Each worker, once ready, froze its start-up heap (schema, modules, cluster metadata).
    settled = await _settled_heaps(two_workers, 2)
    assert len(settled) == 2
    frozen = [re.search(r"ready: (\d+) objects", line) for line in settled]
    assert all(found and int(found[1]) > 10_000 for found in frozen), settled
    alice = await two_workers.api.sign_up("alice")
    assert alice.token
    assert await two_workers.stop(signal.SIGTERM) == 0, two_workers.output()
    await _gone(pids)


async def test_a_crashed_worker_stops_the_others_and_fails_loudly(two_workers: Gateway) -> None:
    pids = await _worker_pids(two_workers, 2)
    crashed, other = sorted(pids)
    os.kill(crashed, signal.SIGKILL)
    assert await two_workers.wait() == 1
    assert f"worker {crashed} exited with code -9" in two_workers.output()
    await _gone({other})


async def test_workers_against_a_cluster_need_a_broker(base_settings: Settings) -> None:
    env = {"GATEWAY_BROKER_URL": "", "GATEWAY_PORT": "8999"}
    code, out = await run_cli(base_settings, "serve", "--workers", "2", env=env)
    assert code == 1, out
    assert "--workers 2 needs GATEWAY_BROKER_URL" in out


async def test_workers_must_be_a_positive_number_or_auto(base_settings: Settings) -> None:
    code, out = await run_cli(base_settings, "serve", "--workers", "none")
    assert code == 1, out
    assert "--workers must be a positive number or 'auto', got 'none'" in out
