"""The local three-node ring for the tests marked ``ring``: held under a lock, left running.

The ring is shared by every worktree of the machine, so a module that uses it holds a lock
on it from start to end, and brings back whatever node it stopped or killed.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from devnode.cassandra import CassandraRing
from gateway.settings import Settings
from gateway.settings.tooling import ToolingSettings
from tests.conftest import GENEROUS_LIMITS

# A request against a ring that cannot answer must end well within this (never a hang).
REQUEST_TIMEOUT = 5.0


@pytest.fixture(scope="module")
async def ring() -> AsyncIterator[CassandraRing]:
    if os.environ.get("CASSANDRA_CONTACT_POINTS"):
        pytest.skip("CASSANDRA_CONTACT_POINTS names a cluster; the local ring is not used")
    ring = CassandraRing(ToolingSettings.from_env(), Settings.from_env().cassandra_port, nodes=3)
    ring.home.mkdir(parents=True, exist_ok=True)
    with (ring.home / ".test-lock").open("a") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            started = time.monotonic()
            await asyncio.to_thread(ring.start)
            # A keyspace created before every node agrees on the schema is not seen by all.
            await asyncio.to_thread(ring.settle_schema)
            print(f"ring test: ring start: {time.monotonic() - started:.1f}s", file=sys.stderr)
            yield ring
        finally:
            await asyncio.to_thread(ring.start)
            fcntl.flock(lock, fcntl.LOCK_UN)


def ring_settings(ring: CassandraRing, prefix: str, **overrides: Any) -> Settings:
    """Settings of a gateway over ``ring`` at replication 3, in a keyspace of its own."""
    return replace(
        Settings.from_env(),
        contact_points=tuple(ring.hosts),
        cassandra_port=ring.port,
        keyspace=f"{prefix}_{uuid.uuid4().hex[:12]}",
        replication="SimpleStrategy:3",
        request_timeout=REQUEST_TIMEOUT,
        query_metrics=True,
        argon2_time_cost=1,
        argon2_memory_cost_kib=8192,
        argon2_parallelism=1,
        # A real cluster's secrets, for a keyspace that is thrown away.
        contacts_identity_pepper=uuid.uuid4().hex + uuid.uuid4().hex,
        url_signing_secret=uuid.uuid4().hex + uuid.uuid4().hex,
        verification_webhook_url="http://127.0.0.1:9/codes",  # no code is asked for
        **{**GENEROUS_LIMITS, **overrides},
    )
