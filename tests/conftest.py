"""Session-wide fixtures: a real Cassandra node, a fresh keyspace, the app on a free port.

The node is the embedded one (started or reused) unless ``CASSANDRA_CONTACT_POINTS``
points at a cluster. Each test run gets its own keyspace, dropped at the end.
"""

from __future__ import annotations

import asyncio
import faulthandler
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from aiohttp import web

from gateway.db.migrations import drop_keyspace
from gateway.ratelimit.policy import Limit
from gateway.server.app import READY, SERVICES, create_app
from gateway.server.serve import app_runner
from gateway.settings import Settings
from gateway.settings.tooling import ToolingSettings
from tests.support.client import Api
from tests.support.webhook import CodeReceiver

ServerFactory = Callable[..., Awaitable[tuple[Api, web.Application]]]

#: Rate limits the suite never reaches: every test comes from 127.0.0.1, and the
#: concurrency tests send in bursts. The tests of the limits start gateways of their own.
GENEROUS_LIMITS: dict[str, Any] = {
    **{limit.value: "100000/s" for limit in Limit},
    "password_queue": 10000,
}


#: A test (with its fixtures' setup and teardown) still running after this long is hung:
#: what it awaits is printed and it is cancelled; a run still stuck a minute later exits.
HANG_SECONDS = float(os.environ.get("TEST_HANG_SECONDS", "240"))


def _awaiting(awaitable: Any) -> list[str]:
    """Where a suspended coroutine waits, down its chain of awaits (a task's own stack
    shows only the outermost frame)."""
    lines = []
    while awaitable is not None:
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "ag_frame", None)
        frame = frame or getattr(awaitable, "gi_frame", None)
        if frame is not None:
            lines.append(f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        following = getattr(awaitable, "cr_await", None) or getattr(awaitable, "ag_await", None)
        following = following or getattr(awaitable, "gi_yieldfrom", None)
        if following is None:
            lines.append(f"awaits {awaitable!r}"[:300])
        awaitable = following
    return lines


def _report_hang(request: pytest.FixtureRequest, last: bool) -> None:
    """Print, past pytest's capture, what every task and thread awaits; then cancel the
    task pytest runs the test (or fixture) in, or on the last call, end the run."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\n!!! {request.node.nodeid} still running; its tasks and threads:", file=sys.stderr)
        driving = []
        for task in asyncio.all_tasks():
            print(f"--- {task.get_name()}", file=sys.stderr)
            for line in _awaiting(task.get_coro()):
                print(f"    {line}", file=sys.stderr)
            if "_run_until_complete_cb" in repr(task):
                driving.append(task)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
    if last:
        os._exit(3)
    for task in driving:
        task.cancel(f"hung for {HANG_SECONDS:.0f}s")


@pytest.fixture(autouse=True)
async def hang_report(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """Set up before and torn down after the test's other fixtures, so a hang anywhere in
    the test is reported (the loop stays free to run these timers)."""
    loop = asyncio.get_running_loop()
    timers = [
        loop.call_later(HANG_SECONDS, _report_hang, request, False),
        loop.call_later(HANG_SECONDS + 60, _report_hang, request, True),
    ]
    yield
    for timer in timers:
        timer.cancel()


@pytest.fixture(scope="session")
async def codes() -> AsyncIterator[CodeReceiver]:
    """The verification webhook every test gateway delivers its codes to."""
    receiver = CodeReceiver()
    await receiver.start()
    yield receiver
    await receiver.close()


@pytest.fixture(scope="session")
def tooling() -> ToolingSettings:
    """Where the embedded node and the local Redis live (``GATEWAY_CASSANDRA_HOME``, ...)."""
    return ToolingSettings.from_env().validate()


@pytest.fixture(scope="session")
def base_settings(codes: CodeReceiver, tooling: ToolingSettings) -> Settings:
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
        contacts_identity_pepper=os.environ.get("GATEWAY_CONTACTS_IDENTITY_PEPPER") or uuid.uuid4().hex * 2,
        **GENEROUS_LIMITS,
        # A kept session is read again only after an hour, so the statement counts the tests
        # assert never depend on how long the machine took between a sign-up and the request.
        session_cache_seconds=3600.0,
        verification_webhook_url=codes.url,
        # GraphiQL and the audits introspect, wherever the node is (a real cluster's default is off).
        introspection=True if settings.introspection is None else settings.introspection,
    )
    if settings.embedded:
        from devnode.cassandra import CassandraNode

        CassandraNode(tooling, settings.cassandra_port).start()
    return settings


@dataclass
class Served:
    """An app served on a free port of 127.0.0.1 as ``gateway serve`` serves it (the head
    deadline and keep-alive of its settings), handlers cancelled when their client leaves."""

    runner: web.AppRunner

    @classmethod
    async def start(
        cls, app: web.Application, settings: Settings, *, handler_cancellation: bool = True
    ) -> Served:
        runner = app_runner(app, settings, handler_cancellation=handler_cancellation)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return cls(runner)

    @property
    def base_url(self) -> str:
        host, port = self.runner.addresses[0][:2]
        return f"http://{host}:{port}"

    async def close(self) -> None:
        await self.runner.cleanup()


async def start_server(
    settings: Settings, *, handler_cancellation: bool = True, **overrides: Any
) -> tuple[Api, web.Application, Served]:
    settings = replace(settings, **overrides)
    app = create_app(settings)
    server = await Served.start(app, settings, handler_cancellation=handler_cancellation)
    await asyncio.wait_for(app[READY].wait(), timeout=120)
    return Api(server.base_url), app, server


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
    """Another gateway instance over the same keyspace, with settings overridden;
    ``handler_cancellation=False``: its handlers run on when their client leaves, as
    ``gateway serve``'s do."""
    started: list[Served] = []

    async def factory(**overrides: Any) -> tuple[Api, web.Application]:
        api, app, srv = await start_server(base_settings, **overrides)
        started.append(srv)
        return api, app

    yield factory
    for srv in started:
        await srv.close()
