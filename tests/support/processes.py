"""Real gateway processes (``python -m gateway serve``) over the test run's keyspace."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from gateway.settings import Settings
from tests.support.client import Api
from tests.support.redis_helpers import free_port

START_TIMEOUT = 120
STOP_TIMEOUT = 60


@dataclass
class Gateway:
    process: asyncio.subprocess.Process
    port: int
    log: Path

    @property
    def api(self) -> Api:
        return Api(f"http://127.0.0.1:{self.port}")

    def output(self) -> str:
        return _tail(self.log)

    async def stop(self, signum: int = signal.SIGTERM) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signum)
        return await self.wait()

    async def wait(self) -> int:
        try:
            return await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise AssertionError(f"gateway on {self.port} did not stop:\n{self.output()}") from None


#: The bearer token of /metrics on the gateway processes the tests start.
METRICS_TOKEN = "metrics-" + "7e" * 20


def gateway_env(settings: Settings, port: int, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "CASSANDRA_KEYSPACE": settings.keyspace,
        "CASSANDRA_CONTACT_POINTS": ",".join(settings.contact_points) or "127.0.0.1",
        "CASSANDRA_PORT": str(settings.cassandra_port),
        "CASSANDRA_REPLICATION": settings.replication,
        "GATEWAY_CONTACTS_IDENTITY_PEPPER": settings.contacts_identity_pepper,
        "GATEWAY_HOST": "127.0.0.1",
        "GATEWAY_PORT": str(port),
        "GATEWAY_QUERY_METRICS": "1",
        "GATEWAY_ARGON2_TIME_COST": "1",
        "GATEWAY_ARGON2_MEMORY_COST_KIB": "8192",
        "GATEWAY_ARGON2_PARALLELISM": "1",
        "GATEWAY_VERIFICATION_WEBHOOK_URL": settings.verification_webhook_url,
        "GATEWAY_SESSION_CACHE_SECONDS": str(settings.session_cache_seconds),
        # A process named a contact point is a real cluster's: /metrics wants a token there.
        "GATEWAY_METRICS_TOKEN": METRICS_TOKEN,
        **extra,
    }


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:]


async def ready(api: Api, process: asyncio.subprocess.Process, log: Path) -> None:
    """Wait until ``/readyz`` answers 200 (the process's broker, if any, connected too)."""
    async with aiohttp.ClientSession() as http:
        for _ in range(START_TIMEOUT * 10):
            if process.returncode is not None:
                raise AssertionError(f"gateway exited with {process.returncode}:\n{_tail(log)}")
            try:
                async with http.get(f"{api.base_url}/readyz") as response:
                    body = await response.json()
                    if response.status == 200 and body.get("broker") in ("ok", "in-process"):
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"gateway never became ready:\n{_tail(log)}")


async def start_gateway(settings: Settings, logs: Path, *args: str, **env: str) -> Gateway:
    """A gateway process on a free port; ``args`` go after ``serve``, ``env`` adds variables."""
    port = free_port()
    log = logs / f"gateway-{port}.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", "serve", *args,
            env=gateway_env(settings, port, **env),
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
    gateway = Gateway(process, port, log)
    try:
        await ready(gateway.api, process, log)
    except BaseException:
        if process.returncode is None:
            process.kill()
            await process.wait()
        raise
    return gateway
