"""Session-wide fixtures: a real Cassandra node, a fresh keyspace, the app on a free port.

The node is the embedded one (started or reused) unless ``CASSANDRA_CONTACT_POINTS``
points at a cluster. Each test run gets its own keyspace, dropped at the end.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.app import READY, SERVICES, create_app
from gateway.db.migrations import drop_keyspace
from gateway.ratelimit.policy import Limit
from gateway.settings import Settings
from tests.client import Api
from tests.webhook import CodeReceiver

ServerFactory = Callable[..., Awaitable[tuple[Api, web.Application]]]

#: Rate limits the suite never reaches: every test comes from 127.0.0.1, and the
#: concurrency tests send in bursts. The tests of the limits start gateways of their own.
GENEROUS_LIMITS: dict[str, Any] = {
    **{limit.value: "100000/s" for limit in Limit},
    "password_queue": 10000,
}


@pytest.fixture(scope="session")
async def codes() -> AsyncIterator[CodeReceiver]:
    """The verification webhook every test gateway delivers its codes to."""
    receiver = CodeReceiver()
    await receiver.start()
    yield receiver
    await receiver.close()


@pytest.fixture(scope="session")
def base_settings(codes: CodeReceiver) -> Settings:
    # Every gateway of a test run, in process or spawned, signs download links alike.
    os.environ.setdefault("GATEWAY_URL_SIGNING_SECRET", uuid.uuid4().hex + uuid.uuid4().hex)
    settings = Settings.from_env()
    keyspace = os.environ.get("TEST_KEYSPACE") or f"test_{uuid.uuid4().hex[:12]}"
    settings = replace(
        settings,
        keyspace=keyspace,
        query_metrics=True,
        # Cheap hashes: the tests exercise sign-in, not argon2's cost.
        argon2_time_cost=1,
        argon2_memory_cost_kib=8192,
        argon2_parallelism=1,
        # A real cluster needs a pepper of its own; the test keyspace is thrown away.
        contacts_identity_pepper=os.environ.get("CONTACTS_IDENTITY_PEPPER") or "test-suite-pepper",
        **GENEROUS_LIMITS,
        verification_webhook_url=codes.url,
    )
    if settings.embedded:
        from devnode.cassandra import CassandraNode

        CassandraNode(settings).start()
    return settings


async def start_server(settings: Settings, **overrides: Any) -> tuple[Api, web.Application, TestServer]:
    app = create_app(replace(settings, **overrides))
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    await asyncio.wait_for(app[READY].wait(), timeout=120)
    return Api(str(server.make_url(""))), app, server


@pytest.fixture(scope="session")
async def server(base_settings: Settings) -> AsyncIterator[tuple[Api, web.Application]]:
    api, app, srv = await start_server(base_settings)
    yield api, app
    db = app[SERVICES].db
    await asyncio.to_thread(drop_keyspace, db, base_settings.keyspace)
    await srv.close()


@pytest.fixture(scope="session")
def api(server: tuple[Api, web.Application]) -> Api:
    return server[0]


@pytest.fixture(scope="session")
def app(server: tuple[Api, web.Application]) -> web.Application:
    return server[1]


@pytest.fixture
async def make_server(
    base_settings: Settings, server: tuple[Api, web.Application]
) -> AsyncIterator[ServerFactory]:
    """Another gateway instance over the same keyspace, with settings overridden."""
    started: list[TestServer] = []

    async def factory(**overrides: Any) -> tuple[Api, web.Application]:
        api, app, srv = await start_server(base_settings, **overrides)
        started.append(srv)
        return api, app

    yield factory
    for srv in started:
        await srv.close()
