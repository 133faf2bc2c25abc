"""The gateway over a real three-node ring (replication 3, LOCAL_QUORUM / LOCAL_SERIAL) losing nodes.

With one node of three stopped every read, write and lightweight transaction still has its
quorum of two replicas; with two stopped none has, and the gateway must say UNAVAILABLE at
once rather than hang; once the nodes are back the same gateway process serves again.

Marked ``ring`` and left out of the default run (it starts three more JVMs): run it with
``scripts/ring-test``. The ring is shared by every worktree of the machine, so the test holds
a lock on it from start to end, and leaves every node running.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from devnode.cassandra import CassandraRing
from gateway.db.migrations import drop_keyspace
from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.conftest import start_server
from tests.support.cli import run_cli
from tests.support.client import Api, Response
from tests.support.messenger import CONVERSATION, SEND
from tests.support.ring_support import REQUEST_TIMEOUT, ring, ring_settings
from tests.support.ring_traffic import Traffic, phase
from tests.support.rooms import HISTORY, JOIN

pytestmark = pytest.mark.ring

RECOVERY_SECONDS = 90.0

__all__ = ["ring"]


@pytest.fixture(scope="module")
async def ring_api(ring: CassandraRing) -> AsyncIterator[tuple[Api, Settings]]:
    settings = ring_settings(ring, "test_ring")
    api, app, server = await start_server(settings)
    yield api, settings
    await asyncio.to_thread(drop_keyspace, app[SERVICES].db, settings.keyspace)
    await server.close()


async def refused(
    api: Api, query: str, variables: dict[str, Any] | None = None, *, safe: bool, **kwargs: Any
) -> Response:
    """The response to an operation the ring cannot serve: UNAVAILABLE saying whether the
    same request may be sent again, and never a hang."""
    response = await asyncio.wait_for(api.call(query, variables, **kwargs), timeout=3 * REQUEST_TIMEOUT)
    assert response.codes == ["UNAVAILABLE"], response
    assert response.errors[0]["extensions"]["retrySafe"] is safe, response
    assert "Traceback" not in response.errors[0]["message"]
    return response


async def test_one_node_down_serves_everything_two_down_is_unavailable_and_service_resumes(
    ring: CassandraRing, ring_api: tuple[Api, Settings]
) -> None:
    api, settings = ring_api
    traffic = Traffic(api)
    timings: dict[str, float] = {}
    assert settings.consistency == "LOCAL_QUORUM" and settings.serial_consistency == "LOCAL_SERIAL"

    with phase("all three up", timings):
        alice = await traffic.sign_up("ralice")
        bob = await traffic.sign_up("rbob")
        room = await traffic.create_room(alice)
        await traffic.join(bob, room)
        await traffic.workout("up", alice, bob, room)

    with phase("stop node 3", timings):
        code, out = await run_cli(settings, "cassandra", "stop", "--node", "3")
        assert code == 0, out
    code, out = await run_cli(settings, "cassandra", "status", "--nodes", "3")
    assert code == 3, out  # not all running
    lines = [line for line in out.splitlines() if line.startswith("Cassandra ring node")]
    assert [" running (pid" in line for line in lines] == [True, True, False], out
    with phase("one node down: traffic", timings):
        await traffic.workout("one-down", alice, bob, room)

    with phase("stop node 2", timings):
        await asyncio.to_thread(ring.stop, 2)
    with phase("two nodes down: refusals", timings):
        await refused(api, CONVERSATION, {"with": bob.login, "first": 2}, safe=True, token=alice.token)
        await refused(api, HISTORY, {"n": room, "first": 5}, safe=True, token=bob.token)
        # A send may have been applied; with its key, repeating it stores nothing twice.
        await refused(api, SEND, {"to": bob.login, "content": "lost"}, safe=False, token=alice.token)
        keyed = (
            "mutation($to: String!, $c: String!, $k: String)"
            " { sendMessage(to: $to, content: $c, clientMessageId: $k) { id } }"
        )
        await refused(api, keyed, {"to": bob.login, "c": "kept", "k": "ring-1"}, safe=True, token=alice.token)
        await refused(api, JOIN, {"n": room}, safe=False, token=alice.token)
        await refused(
            api,
            "mutation($i: SignUpInput!) { signUp(input: $i) { token } }",
            {"i": {"login": "ringnobody", "password": "correct-horse", "firstname": "N",
                   "lastname": "B", "email": "ringnobody@example.com", "bio": ""}},
            safe=False,
        )  # fmt: skip

    with phase("restart nodes 2 and 3", timings):
        await asyncio.to_thread(ring.start)
    with phase("gateway serving again", timings):
        deadline = time.monotonic() + RECOVERY_SECONDS
        while True:
            response = await api.call(CONVERSATION, {"with": bob.login, "first": 2}, token=alice.token)
            if not response.errors:
                break
            assert response.codes == ["UNAVAILABLE"], response
            assert time.monotonic() < deadline, "the gateway did not come back after the ring did"
            await asyncio.sleep(0.5)
    with phase("all up again: traffic", timings):
        await traffic.workout("back", alice, bob, room)
        # What was written with a node down is all there, read at quorum.
        everything = await traffic.conversation(alice, bob)
        for tag in ("up", "one-down", "back"):
            assert f"{tag}: hello bob" in everything and f"{tag}: hello alice" in everything
        assert "lost" not in everything
