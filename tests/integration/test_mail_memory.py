"""The gateway's memory while a 25 MB attachment streams through it.

A real ``gateway serve`` process over the test keyspace; its resident set is
read from ``/proc`` (the peak via ``VmHWM``, reset just before the upload).
Strawberry alone would hold the whole file (and a copy) in memory; the
streaming adapter holds about one 1000 KiB chunk at a time.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from gateway.mail.attachment_store import CHUNK_SIZE, MAX_ATTACHMENT_BYTES
from gateway.settings import Settings
from tests.support.client import Api
from tests.support.mail_helpers import send_files

pytestmark = pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def _reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def gateway_process(
    base_settings: Settings, api: Api, tmp_path: Path
) -> AsyncIterator[tuple[Api, int]]:
    port = _free_port()
    env = {
        **os.environ,
        "CASSANDRA_KEYSPACE": base_settings.keyspace,
        "CASSANDRA_CONTACT_POINTS": ",".join(base_settings.contact_points) or "127.0.0.1",
        "CASSANDRA_PORT": str(base_settings.cassandra_port),
        "CASSANDRA_REPLICATION": base_settings.replication,
        "GATEWAY_CONTACTS_IDENTITY_PEPPER": base_settings.contacts_identity_pepper,
        "GATEWAY_VERIFICATION_WEBHOOK_URL": base_settings.verification_webhook_url,
        "GATEWAY_HOST": "127.0.0.1",
        "GATEWAY_PORT": str(port),
        "GATEWAY_LOG_LEVEL": "WARNING",
        "GATEWAY_SEED": "0",
    }
    log = tmp_path / "gateway.log"
    with log.open("wb") as sink:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", "serve", env=env, stdout=sink, stderr=sink
        )
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(600):
                assert process.returncode is None, log.read_text()
                try:
                    async with http.get(f"http://127.0.0.1:{port}/readyz") as response:
                        if response.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
            else:
                pytest.fail("the gateway process did not become ready:\n" + log.read_text())
        yield Api(f"http://127.0.0.1:{port}"), process.pid
    finally:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), timeout=15)
        except TimeoutError:
            process.kill()
            await process.wait()


async def test_uploading_25_mb_keeps_gateway_memory_within_a_few_chunks(
    api: Api, gateway_process: tuple[Api, int]
) -> None:
    gateway, pid = gateway_process
    alice, bob = await api.sign_up("mem"), await api.sign_up("memb")
    # Warm up: the code paths, prepared statements and connections an upload uses.
    warm = await send_files(gateway, alice, [bob.login], [("warm.bin", os.urandom(2 * CHUNK_SIZE + 7), None)])
    assert not warm.errors, warm.errors
    await asyncio.sleep(0.5)

    idle_kib = _status_kib(pid, "VmRSS")
    _reset_peak(pid)
    content = os.urandom(MAX_ATTACHMENT_BYTES)
    response = await send_files(gateway, alice, [bob.login], [("big.bin", content, None)])
    peak_kib = _status_kib(pid, "VmHWM")
    assert not response.errors, response.errors
    assert response.data["sendEmail"]["attachments"][0]["size"] == MAX_ATTACHMENT_BYTES

    growth = (peak_kib - idle_kib) * 1024
    print(
        f"\ngateway RSS idle {idle_kib / 1024:.1f} MiB, peak during a 25 MiB upload"
        f" {peak_kib / 1024:.1f} MiB: +{growth / 1024 / 1024:.2f} MiB"
        f" = {growth / CHUNK_SIZE:.2f} chunks"
    )
    assert growth < 3 * CHUNK_SIZE
