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
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from devnode.cassandra import CassandraRing
from gateway.db.migrations import drop_keyspace
from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.conftest import start_server
from tests.support.cli import run_cli
from tests.support.client import Account, Api, Response
from tests.support.messenger import CONVERSATION, SEND
from tests.support.ring_support import REQUEST_TIMEOUT, ring, ring_settings
from tests.support.rooms import CREATE, HISTORY, JOIN, POST, USER_ROOMS, room_name

pytestmark = pytest.mark.ring

RECOVERY_SECONDS = 90.0

__all__ = ["ring"]


@contextmanager
def phase(name: str, timings: dict[str, float]) -> Iterator[None]:
    started = time.monotonic()
    yield
    timings[name] = time.monotonic() - started
    print(f"ring test: {name}: {timings[name]:.1f}s", file=sys.stderr, flush=True)


@pytest.fixture(scope="module")
async def ring_api(ring: CassandraRing) -> AsyncIterator[tuple[Api, Settings]]:
    settings = ring_settings(ring, "test_ring")
    api, app, server = await start_server(settings)
    yield api, settings
    await asyncio.to_thread(drop_keyspace, app[SERVICES].db, settings.keyspace)
    await server.close()


class Traffic:
    """The operations a client does, each checked: queries, plain writes and LWTs."""

    def __init__(self, api: Api) -> None:
        self.api = api

    async def sign_up(self, prefix: str) -> Account:  # LWT: INSERT ... IF NOT EXISTS on the login
        return await self.api.sign_up(prefix)

    async def send(self, sender: Account, to: Account, content: str) -> None:  # writes + unread LWT
        data = await self.api.ok(SEND, {"to": to.login, "content": content}, token=sender.token)
        assert data["sendMessage"]["content"] == content

    async def create_room(self, owner: Account) -> str:  # LWT
        name = room_name("ring")
        data = await self.api.ok(CREATE, {"n": name, "b": None}, token=owner.token)
        assert data["createRoom"]["name"] == name
        return name

    async def join(self, member: Account, name: str) -> None:  # LWT on the membership
        data = await self.api.ok(JOIN, {"n": name}, token=member.token)
        assert member.login in [node["login"] for node in data["joinRoom"]["participants"]["nodes"]]

    async def post(self, author: Account, name: str, content: str) -> None:
        await self.api.ok(POST, {"r": name, "c": content}, token=author.token)

    async def conversation(self, reader: Account, other: Account) -> list[str]:
        """Every message of the conversation, read two to a page."""
        contents: list[str] = []
        after: str | None = None
        while True:
            variables = {"with": other.login, "first": 2, "after": after}
            page = (await self.api.ok(CONVERSATION, variables, token=reader.token))["me"]["conversation"]
            contents += [edge["node"]["content"] for edge in page["messages"]["edges"]]
            if not page["messages"]["pageInfo"]["hasNextPage"]:
                return contents
            after = page["messages"]["pageInfo"]["endCursor"]

    async def history(self, reader: Account, name: str) -> list[str]:
        data = await self.api.ok(HISTORY, {"n": name, "first": 50}, token=reader.token)
        return [edge["node"]["content"] for edge in data["room"]["messages"]["edges"]]

    async def rooms_of(self, account: Account) -> list[str]:
        data = await self.api.ok(USER_ROOMS, {"l": account.login, "first": 1})
        names = [node["name"] for node in data["user"]["rooms"]["nodes"]]
        page = data["user"]["rooms"]["pageInfo"]
        while page["hasNextPage"]:
            more = await self.api.ok(USER_ROOMS, {"l": account.login, "first": 1, "after": page["endCursor"]})
            names += [node["name"] for node in more["user"]["rooms"]["nodes"]]
            page = more["user"]["rooms"]["pageInfo"]
        return names

    async def workout(self, tag: str, alice: Account, bob: Account, room: str) -> None:
        """Everything at once: a new user, messages both ways, a new room joined, pages read."""
        carol = await self.sign_up(f"r{tag}")
        await self.send(alice, bob, f"{tag}: hello bob")
        await self.send(bob, alice, f"{tag}: hello alice")
        await self.send(carol, alice, f"{tag}: hello from carol")
        await self.join(carol, room)
        new_room = await self.create_room(carol)
        await self.join(alice, new_room)
        await self.post(carol, room, f"{tag}: carol was here")
        assert (await self.conversation(alice, carol)) == [f"{tag}: hello from carol"]
        both = await self.conversation(bob, alice)
        assert both[:2] == [f"{tag}: hello alice", f"{tag}: hello bob"], both
        assert f"{tag}: carol was here" in await self.history(bob, room)
        assert set(await self.rooms_of(carol)) == {room, new_room}


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
