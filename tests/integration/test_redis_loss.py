"""Redis killed under load: two gateway processes, live subscriptions, three kill/restart cycles.

Two real gateway processes share a private Redis as their broker. Subscribers hold
``messageReceived`` on both processes and ``roomMessages`` on one, each on a socket it keeps,
while clients send a steady load of queries and mutations through both. Then Redis is killed
with SIGKILL (every connection cut, every key gone: nothing is persisted) and started again,
three times. Per the contract (``docs/operations.md``, "Broker loss"):

- queries and mutations keep answering: none of the load's requests may fail (they need
  Cassandra, not the broker; what they would publish is dropped);
- a live subscription ends with ``UNAVAILABLE`` ("Live updates are unavailable right now"),
  a new one is refused the same way, and once the broker is back the client resubscribes
  with ``after:`` and gets every message it missed, each once, in order;
- the limits that guard secrets fail closed (``signIn`` answers ``UNAVAILABLE``) and those of
  volume fail open (the load's sends go on); presence answers from each process's own
  sockets (a user whose only socket is on A is online on A, offline on B) until the broker
  is back and the processes write their claims again;
- no process leaks: its event loop's tasks (``gateway_asyncio_tasks`` on ``/metrics``) are as
  many after each cycle as before the first, at the same quiet point, and its resident
  memory does not grow from cycle to cycle.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from devnode.redis import RedisServer
from gateway.messenger.events import user_messages_channel
from gateway.rooms.events import room_channel
from gateway.settings import Settings
from tests.support.client import Account, Api
from tests.support.presence import presence_of
from tests.support.processes import METRICS_TOKEN, Gateway, start_gateway
from tests.support.rate_limits import sign_in
from tests.support.redis_helpers import WAIT, redis_server, subscribers
from tests.support.rooms import room_name
from tests.support.ws_protocol import TRANSPORT_WS, Socket

CYCLES = 3
CLIENTS = 6
#: Seconds Redis stays down in each cycle, under load.
DOWN = 3.0
#: Seconds of load with the broker up before the first kill.
WARMUP = 2.0
TTL = 3.0
RECEIVED = "subscription($after: String) { messageReceived(after: $after) { id } }"
ROOM_MESSAGES = "subscription($r: String!, $after: String) { roomMessages(room: $r, after: $after) { id } }"
SEND = "mutation($to: String!, $c: String!) { sendMessage(to: $to, content: $c) { id } }"
POST = "mutation($r: String!, $c: String!) { postRoomMessage(room: $r, content: $c) { id } }"
MARK = "mutation($w: String!) { markConversationRead(with: $w) { unreadCount } }"
PARTNERS = "{ me { talkPartners(first: 5) { nodes { unreadCount partner { login } } } } }"
CONVERSATION = "query($w: String!) { me { conversation(with: $w) { messages(first: 5) { nodes { id } } } } }"
HISTORY = "query($r: String!) { room(name: $r) { participantCount messages(first: 5) { nodes { id } } } }"
SEND_EMAIL = "mutation($i: EmailInput!) { sendEmail(input: $i) { id } }"
UNAVAILABLE_SUBSCRIPTION = "Live updates are unavailable right now; resubscribe later."
UNAVAILABLE_LIMITS = "Rate limits cannot be checked right now; retrying later is safe."


@pytest.fixture
def broker(tmp_path: Path) -> Any:
    with redis_server(tmp_path / "redis") as server:
        yield server


@pytest.fixture
async def pair(
    base_settings: Settings, broker: RedisServer, server: Any, tmp_path: Path
) -> AsyncIterator[tuple[Gateway, Gateway]]:
    """Gateways A and B; ``server`` first, so the keyspace exists and is migrated."""
    env = {
        **base_settings.rate_variables(),
        "GATEWAY_BROKER_URL": broker.url,
        "GATEWAY_PRESENCE_TTL_SECONDS": str(TTL),
    }
    a, b = await asyncio.gather(*(start_gateway(base_settings, tmp_path, **env) for _ in range(2)))
    try:
        yield a, b
    finally:
        codes = await asyncio.gather(a.stop(), b.stop())
    assert list(codes) == [0, 0], [a.output(), b.output()]


@dataclass
class Load:
    """Clients in closed loops; each request's outcome ("ok" or its code) is counted."""

    outcomes: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    #: The messages sent to the subscribed user and posted in the room, as acknowledged.
    to_bob: list[str] = field(default_factory=list)
    posted: list[str] = field(default_factory=list)
    running: asyncio.Event = field(default_factory=asyncio.Event)
    in_flight: int = 0
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    async def call(
        self, api: Api, query: str, variables: dict[str, Any], token: str
    ) -> dict[str, Any] | None:
        await self.running.wait()
        self.in_flight += 1
        self.idle.clear()
        try:
            response = await api.call(query, variables, token=token)
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self.idle.set()
        if response.errors:
            self.outcomes[response.codes[0]] += 1
            self.errors.append(f"{query.split('{')[0].strip() or 'query'} {response.errors[0]}")
            return None
        self.outcomes["ok"] += 1
        return response.data

    async def quiet(self) -> None:
        """Hold the clients and wait for their requests in flight to be answered."""
        self.running.clear()
        if self.in_flight:
            await self.idle.wait()


@dataclass
class Subscriber:
    """One socket holding one subscription; when the subscription ends it records how and
    subscribes again from the last event it got (``after:``), as a client resumes."""

    api: Api
    account: Account
    query: str
    variables: dict[str, Any]
    received: list[str] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    #: Subscriptions that ended with no event: refused while the broker was down.
    refused: int = 0

    async def run(self) -> None:
        async with Socket.open(self.api, TRANSPORT_WS) as socket:
            acked = await socket.init(self.account.token)
            assert acked is not None and acked["type"] == "connection_ack", acked
            while True:
                after = self.received[-1] if self.received else None
                operation = await socket.start(self.query, {**self.variables, "after": after})
                ended, got = len(self.ends), 0
                while True:
                    message = await socket.ws.receive()
                    assert message.type == aiohttp.WSMsgType.TEXT, message
                    data = message.json()
                    if data.get("id") != operation:
                        continue
                    # An end comes as a result with errors (then "complete"), a refusal as
                    # the protocol's "error" message; either way the client resubscribes.
                    errors = (
                        data["payload"] if data["type"] == "error" else data.get("payload", {}).get("errors")
                    )
                    if errors:
                        error = errors[0]
                        assert error.get("extensions", {}).get("code") == "UNAVAILABLE", error
                        self.refused += got == 0  # refused, or ended before any event
                        self.ends.append(error)
                        if data["type"] == "error":
                            break
                        continue
                    if data["type"] == "complete":
                        assert self.ends and len(self.ends) > ended, f"completed without an error: {data}"
                        break
                    assert data["type"] == "next", data
                    [value] = data["payload"]["data"].values()
                    self.received.append(value["id"])
                    got += 1
                await asyncio.sleep(0.2)


async def tasks_of(gateway: Gateway) -> Counter[str]:
    """The process's live asyncio tasks by coroutine (``gateway_asyncio_tasks``)."""
    headers = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{gateway.api.base_url}/metrics", headers=headers) as response,
    ):
        assert response.status == 200
        text = await response.text()
    return Counter(
        {
            sample.labels["coroutine"]: int(sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "gateway_asyncio_tasks"
        }
    )


def rss_kib(gateway: Gateway) -> int:
    status = Path(f"/proc/{gateway.process.pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))


async def readyz_broker(gateway: Gateway) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(f"{gateway.api.base_url}/readyz") as response:
        return response.status, (await response.json())["broker"]


#: Tasks whose failure :func:`until` reports at once (the test's subscribers and clients).
WATCHED: list[asyncio.Task[None]] = []


async def until(what: str, check: Any, within: float = WAIT) -> None:
    deadline = time.monotonic() + within
    while not await check():
        for task in WATCHED:
            if task.done():
                task.result()  # a subscriber or client that failed says why
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.05)


async def test_redis_killed_three_times_under_load_loses_no_request_and_leaks_nothing(
    pair: tuple[Gateway, Gateway], broker: RedisServer, base_settings: Settings
) -> None:
    a, b = pair
    started = time.monotonic()
    alice, bob, carol, *others = await asyncio.gather(*(a.api.sign_up(f"rl{n}") for n in range(3 + CLIENTS)))
    room = room_name("rl")
    await a.api.ok("mutation($n: String!) { createRoom(name: $n) { name } }", {"n": room}, token=alice.token)
    await b.api.ok("mutation($n: String!) { joinRoom(name: $n) { name } }", {"n": room}, token=carol.token)
    bob_channel = f"{base_settings.keyspace}:{user_messages_channel(bob.login)}"
    room_key = f"{base_settings.keyspace}:{room_channel(room)}"

    # Bob listens on both processes; carol, on A only, to the room (her only socket).
    listeners = [
        Subscriber(a.api, bob, RECEIVED, {}),
        Subscriber(b.api, bob, RECEIVED, {}),
        Subscriber(a.api, carol, ROOM_MESSAGES, {"r": room}),
    ]
    listening = [asyncio.create_task(s.run()) for s in listeners]

    async def all_subscribed() -> bool:
        return (
            await subscribers(broker.url, bob_channel) == 2 and await subscribers(broker.url, room_key) == 1
        )

    load = Load()
    gateways = itertools.cycle([a, b])
    sequence = itertools.count()

    async def client(index: int, me: Account, partner: Account) -> None:
        while True:
            api = next(gateways).api
            n = next(sequence)
            step = n % 6
            if step == 0:
                await load.call(api, SEND, {"to": partner.login, "c": f"load {n}"}, me.token)
            elif step == 1:
                await load.call(api, MARK, {"w": partner.login}, me.token)
            elif step == 2:
                await load.call(api, PARTNERS, {}, me.token)
            elif step == 3:
                await load.call(api, CONVERSATION, {"w": partner.login}, me.token)
            elif step == 4:
                await load.call(
                    api, SEND_EMAIL, {"i": {"to": [partner.login], "subject": "s", "body": "b"}}, me.token
                )
            else:
                await load.call(api, HISTORY, {"r": room}, alice.token)

    async def writer() -> None:
        """Alice's messages to bob and posts in the room, one at a time (so a resumed
        subscription has no racing sends to miss): what the subscribers must all get."""
        for n in itertools.count():
            data = await load.call(
                next(gateways).api, SEND, {"to": bob.login, "c": f"to bob {n}"}, alice.token
            )
            if data is not None:
                load.to_bob.append(data["sendMessage"]["id"])
            data = await load.call(next(gateways).api, POST, {"r": room, "c": f"post {n}"}, alice.token)
            if data is not None:
                load.posted.append(data["postRoomMessage"]["id"])

    pairs = [(others[i], others[(i + 1) % len(others)]) for i in range(len(others))]
    working = [asyncio.create_task(client(i, me, partner)) for i, (me, partner) in enumerate(pairs)]
    working.append(asyncio.create_task(writer()))
    WATCHED[:] = working + listening
    measured: list[tuple[str, dict[str, Counter[str]], dict[str, int]]] = []
    timings: dict[str, float] = {}
    try:
        await until("every subscription registered in Redis", all_subscribed)
        load.running.set()
        await asyncio.sleep(WARMUP)

        async def sample() -> dict[str, Counter[str]]:
            return {g.api.base_url: await tasks_of(g) for g in (a, b)}

        async def measure(label: str) -> None:
            """With the clients held: the tasks once no short-lived one (a request's, a
            background clean-up's) is left: the same twice in a row before the first cycle,
            the same as then after each (a leaked task never ends, so that never comes)."""
            await load.quiet()
            tasks = await sample()
            for _ in range(int(WAIT / 0.3)):
                await asyncio.sleep(0.3)
                previous, tasks = tasks, await sample()
                if tasks == (previous if not measured else measured[0][1]):
                    break
            measured.append((label, tasks, {g.api.base_url: rss_kib(g) for g in (a, b)}))
            load.running.set()

        await measure("before")
        for cycle in range(1, CYCLES + 1):
            mark = time.monotonic()
            ends_before = [len(s.ends) for s in listeners]
            await asyncio.to_thread(broker.kill)

            async def both_lost() -> bool:
                return [await readyz_broker(g) for g in (a, b)] == [(200, "unreachable")] * 2

            await until("both processes see the broker lost, and stay ready", both_lost)

            # Every live subscription ended with UNAVAILABLE; new ones are refused alike.
            async def all_ended(ends_before: list[int] = ends_before) -> bool:
                return all(len(s.ends) > n for s, n in zip(listeners, ends_before, strict=True))

            await until("every subscription ended", all_ended)
            # Limits that guard secrets fail closed, on both processes.
            for gateway in (a, b):
                refused = await sign_in(gateway.api, alice.login, alice.password)
                assert refused.codes == ["UNAVAILABLE"], refused
                assert refused.errors[0]["message"] == UNAVAILABLE_LIMITS
            # Presence: each process answers from its own sockets.
            assert (await presence_of(a.api, alice, carol.login) or {}).get("online") is True
            assert (await presence_of(b.api, alice, carol.login) or {}).get("online") is False
            await asyncio.sleep(max(0.0, DOWN - (time.monotonic() - mark)))
            timings[f"cycle {cycle}: down"] = time.monotonic() - mark

            back = time.monotonic()
            await asyncio.to_thread(broker.start)

            async def both_back() -> bool:
                return [await readyz_broker(g) for g in (a, b)] == [(200, "ok")] * 2

            await until("both processes reconnect", both_back)
            timings[f"cycle {cycle}: reconnected"] = time.monotonic() - back
            await until("every subscription resumed", all_subscribed)

            async def carol_online_on_b() -> bool:
                return (await presence_of(b.api, alice, carol.login) or {}).get("online") is True

            await until("A's presence claims written again", carol_online_on_b)
            timings[f"cycle {cycle}: resumed"] = time.monotonic() - back

            async def sign_in_checked() -> bool:  # the limiter asks again a second after a failure
                return (await sign_in(b.api, alice.login, alice.password)).codes == []

            await until("sign-in's limits checked again", sign_in_checked)
            await measure(f"after cycle {cycle}")
        await asyncio.sleep(WARMUP)
        await load.quiet()
        # Every message to bob and every post reached each subscriber once, in order.
        expected = {0: load.to_bob, 1: load.to_bob, 2: load.posted}

        async def delivered() -> bool:
            return all(len(listeners[i].received) >= len(ids) for i, ids in expected.items())

        with contextlib.suppress(AssertionError):  # what is missing is reported below
            await until("the subscribers caught up", delivered)
    finally:
        for task in working + listening:
            task.cancel()
        await asyncio.gather(*working, *listening, return_exceptions=True)
    timings["total"] = time.monotonic() - started

    report = [
        f"redis loss: {CYCLES} cycles of SIGKILL and restart under load, {timings['total']:.1f}s",
        f"  requests: {sum(load.outcomes.values())} {dict(load.outcomes)}",
        "  subscriptions: "
        + "; ".join(
            f"{len(s.received)} events, ended {len(s.ends)} times ({s.refused} refusals)" for s in listeners
        ),
        "  timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()),
        *(
            f"  {label}: tasks {[sum(t.values()) for t in tasks.values()]}, RSS KiB {list(rss.values())}"
            for label, tasks, rss in measured
        ),
    ]
    print("\n".join(report), file=sys.stderr)

    assert load.outcomes["ok"] > 0 and not load.errors, load.errors[:5]
    for subscriber, ids in zip(listeners, expected.values(), strict=True):
        missing = [i for i in ids if i not in subscriber.received]
        extra = [i for i in subscriber.received if i not in ids]
        assert subscriber.received == ids, (len(subscriber.received), len(ids), missing[:3], extra[:3])
        assert len(subscriber.ends) >= CYCLES
        for error in subscriber.ends:
            assert error["extensions"]["code"] == "UNAVAILABLE", error
            assert error["message"] == UNAVAILABLE_SUBSCRIPTION, error
    # No leak: at the same quiet point, as many tasks after each cycle as before the first,
    # and resident memory flat from the first cycle to the last.
    before = measured[0][1]
    for label, tasks, _ in measured[1:]:
        for url, counts in tasks.items():
            assert counts == before[url], (label, url, counts - before[url], before[url] - counts)
    first_rss, last_rss = measured[1][2], measured[-1][2]
    for url in first_rss:
        assert last_rss[url] - first_rss[url] < 16 * 1024, (url, first_rss[url], last_rss[url])
