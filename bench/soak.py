"""Soak: a mixed workload against two gateway processes for a long time, window by window.

``gateway serve --workers 2`` over a Redis of its own and a throwaway keyspace, as
``scripts/bench live`` runs it, and for ``minutes`` (30 by default):

- the canonical reads: a conversation's newest 50 messages, the main view (talk partners),
  a room's history, the blog's newest posts, the viewer's folders with their newest emails;
- direct messages sent (``sendMessage``) and room messages posted (``postRoomMessage``);
- emails sent with a 64 KiB attachment as a multipart upload (``sendEmail``);
- subscriptions connecting and leaving: ``--sockets`` sockets subscribed to the room (a few
  to their own ``messageReceived``), every second ``--churn`` of them closed without a word and
  as many new ones opened.

Requests go out on an open-loop schedule (``--rate`` a second, the kinds in fixed shares, and
``--uploads`` a second), from the users of one room. After every window (``--window``
minutes, 5 by default) it prints one line, and at the end a table of them all: requests per
second, p50 and p99 of every request, errors by code (``extensions.code``, or the HTTP status,
or the client's exception), room deliveries per second, sockets opened and closed, and each
worker's RSS and open file descriptors at the window's end. The summary gives the RSS growth
of each worker after the first window and the drift of p99 from the first window to the last.

Run: ``scripts/soak [minutes] [--window M] ...`` (``--help``); ``scripts/soak 2 --window 0.5``
is a quick try.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import random
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
import orjson

from bench.bench_messenger import CONVERSATION, MAIN_VIEW
from bench.bench_overload import pct, raise_fd_limit
from bench.client import GraphQLClient, HttpError
from bench.live_case import Gateway, gateway, load_average
from bench.live_world import PAIR_SUBSCRIPTION, POST, ROOM_SUBSCRIPTION, SEND, Member, own_redis, world_of
from bench.ws_client import Arrivals, Subscriber, subscribe
from gateway.settings import Settings

ROOM_HISTORY = """query($r: String!) { room(name: $r) { participantCount
  messages(first: 50) { edges { cursor node { id content postedAt author { login } } } } } }"""
POSTS = "{ posts(first: 10) { edges { node { slug title publishedAt author { login } } } } }"
FOLDERS = """{ me { folders { label unreadCount
  emails(first: 20) { edges { node { subject sentAt read from { login } } } } } } }"""
SEND_EMAIL = "mutation($i: EmailInput!) { sendEmail(input: $i) { id attachments { size } } }"

#: The request kinds and their shares of ``--rate``.
MIX = (
    ("conversation", 30),
    ("main view", 15),
    ("room history", 10),
    ("posts", 5),
    ("folders", 10),
    ("send", 15),
    ("room post", 15),
)
ATTACHMENT = os.urandom(64 * 1024)
#: Of the sockets, every this many subscribes to its user's ``messageReceived`` instead of the room.
DIRECT_EVERY = 5
TIMEOUT = 30.0


@dataclass
class Window:
    index: int
    started: float
    ended: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    opened: int = 0
    closed: int = 0
    deliveries: int = 0
    rss_mib: list[float] = field(default_factory=list)
    fds: list[int] = field(default_factory=list)
    late_ms: float = 0.0
    #: The first thing each kind of error said (its message, the kind of request it was).
    said: dict[str, str] = field(default_factory=dict)

    def error(self, name: str, said: str) -> None:
        self.errors[name] += 1
        self.said.setdefault(name, said[:300])

    @property
    def seconds(self) -> float:
        return max(1e-9, self.ended - self.started)


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


class Soak:
    def __init__(self, gw: Gateway, members: list[Member], room: str, args: argparse.Namespace) -> None:
        self.gw = gw
        self.members = members
        self.room = room
        self.args = args
        self.client = GraphQLClient(f"{gw.base}/graphql")
        self.random = random.Random(args.seed)
        self.window = Window(0, time.monotonic())
        self.pending: set[asyncio.Task[None]] = set()
        self.arrivals = Arrivals(args.sockets * 64)
        self.sockets: list[Subscriber] = []
        self.next_socket = 0
        self.seq = 0
        self.delivered = 0
        self.http: aiohttp.ClientSession | None = None

    def _pair(self) -> tuple[Member, Member]:
        a, b = self.random.sample(range(len(self.members)), 2)
        return self.members[a], self.members[b]

    async def _graphql(self, kind: str, query: str, variables: dict[str, Any], token: str) -> None:
        window = self.window
        started = time.monotonic()
        try:
            async with asyncio.timeout(TIMEOUT):
                status, body = await self.client.post(query, variables, token)
        except TimeoutError:
            window.error("timeout", f"{kind}: no answer within {TIMEOUT} s")
            return
        except (HttpError, OSError) as error:
            window.error(type(error).__name__, f"{kind}: {error}")
            return
        self._tally(window, kind, started, status, body)

    def _tally(self, window: Window, kind: str, started: float, status: int, body: dict[str, Any]) -> None:
        ms = (time.monotonic() - started) * 1000
        window.latencies_ms.append(ms)
        window.by_kind.setdefault(kind, []).append(ms)
        errors = body.get("errors") or []
        if errors:
            for error in errors:
                code = str((error.get("extensions") or {}).get("code") or "no code")
                window.error(code, f"{kind}: {error.get('message')}")
        elif status != 200:
            window.error(f"HTTP {status}", f"{kind}: {body}")

    async def request(self, kind: str) -> None:
        viewer, other = self._pair()
        if kind == "conversation":
            await self._graphql(kind, CONVERSATION, {"with": other.login}, viewer.token)
        elif kind == "main view":
            await self._graphql(kind, MAIN_VIEW, {}, viewer.token)
        elif kind == "room history":
            await self._graphql(kind, ROOM_HISTORY, {"r": self.room}, viewer.token)
        elif kind == "posts":
            await self._graphql(kind, POSTS, {}, viewer.token)
        elif kind == "folders":
            await self._graphql(kind, FOLDERS, {}, viewer.token)
        elif kind == "send":
            self.seq += 1
            await self._graphql(kind, SEND, {"to": other.login, "c": f"seq={self.seq};"}, viewer.token)
        elif kind == "room post":
            self.seq += 1
            await self._graphql(kind, POST, {"r": self.room, "c": f"seq={self.seq};"}, viewer.token)

    async def upload(self) -> None:
        assert self.http is not None
        window = self.window
        viewer, other = self._pair()
        self.seq += 1
        operations = {
            "query": SEND_EMAIL,
            "variables": {
                "i": {"to": [other.login], "subject": f"soak {self.seq}", "body": "attached",
                      "attachments": [None]},
            },
        }  # fmt: skip
        form = aiohttp.FormData()
        form.add_field("operations", orjson.dumps(operations).decode(), content_type="application/json")
        form.add_field("map", '{"0": ["variables.i.attachments.0"]}', content_type="application/json")
        form.add_field("0", ATTACHMENT, filename="soak.bin", content_type="application/octet-stream")
        headers = {"Authorization": f"Bearer {viewer.token}", "GraphQL-Preflight": "1"}
        started = time.monotonic()
        try:
            async with (
                asyncio.timeout(TIMEOUT),
                self.http.post(f"{self.gw.base}/graphql", data=form, headers=headers) as response,
            ):
                status, body = response.status, await response.json(content_type=None)
        except TimeoutError:
            window.error("timeout", f"upload: no answer within {TIMEOUT} s")
            return
        except (aiohttp.ClientError, OSError, ValueError) as error:
            window.error(type(error).__name__, f"upload: {error}")
            return
        self._tally(window, "upload", started, status, body)

    async def _open_socket(self) -> None:
        index = self.next_socket
        self.next_socket += 1
        member = self.members[index % len(self.members)]
        if index % DIRECT_EVERY:
            subscription: dict[str, Any] = {"query": ROOM_SUBSCRIPTION, "variables": {"r": self.room}}
        else:
            subscription = {"query": PAIR_SUBSCRIPTION}
        host, port = "127.0.0.1", self.gw.port
        try:
            socket = await subscribe(
                index % len(self.arrivals.probes), host, port, "/graphql", member.token, subscription,
                self.arrivals,
            )  # fmt: skip
        except (OSError, TimeoutError) as error:
            self.window.error(f"socket {type(error).__name__}", f"subscribing: {error}")
            return
        self.sockets.append(socket)
        self.window.opened += 1

    async def churn(self) -> None:
        """Keep ``--sockets`` open; every second close ``--churn`` and open as many."""
        while True:
            self.sockets = [s for s in self.sockets if not s.closed]
            missing = self.args.sockets - len(self.sockets)
            for _ in range(min(self.args.churn, len(self.sockets)) if missing <= 0 else 0):
                leaving = self.sockets.pop(self.random.randrange(len(self.sockets)))
                leaving.close()
                self.window.closed += 1
                missing += 1
            await asyncio.gather(*(self._open_socket() for _ in range(max(0, missing))))
            await asyncio.sleep(1.0)

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def schedule(self, rate: float, pick: Any, until: float) -> None:
        """Open-loop: the n-th request at ``start + n / rate``, whatever the earlier ones do."""
        start = time.monotonic()
        n = 0
        while True:
            due = start + n / rate
            if due >= until:
                return
            now = time.monotonic()
            if due > now:
                await asyncio.sleep(due - now)
            else:
                self.window.late_ms = max(self.window.late_ms, (now - due) * 1000)
            self._spawn(pick())
            n += 1

    def close_window(self) -> Window:
        window = self.window
        window.ended = time.monotonic()
        window.deliveries = len(self.arrivals) - self.delivered
        self.delivered = len(self.arrivals)
        workers = self.gw.worker_pids
        window.rss_mib = [_rss_mib(pid) for pid in workers]
        window.fds = [_fds(pid) for pid in workers]
        self.window = Window(window.index + 1, window.ended)
        return window


def kinds(rng: random.Random) -> Any:
    names = [name for name, _ in MIX]
    weights = [weight for _, weight in MIX]
    return lambda: rng.choices(names, weights)[0]


def line(w: Window) -> str:
    errors = ", ".join(f"{k} {v}" for k, v in sorted(w.errors.items())) or "none"
    return (
        f"| {w.index + 1} | {len(w.latencies_ms) / w.seconds:.1f} | {pct(w.latencies_ms, 0.5):.1f} | "
        f"{pct(w.latencies_ms, 0.99):.1f} | {errors} | {w.deliveries / w.seconds:.0f} | "
        f"{w.opened}/{w.closed} | {' / '.join(f'{r:.0f}' for r in w.rss_mib)} | "
        f"{' / '.join(str(f) for f in w.fds)} |"
    )


HEADER = (
    "| window | requests/s | p50 ms | p99 ms | errors | deliveries/s | sockets opened/closed | "
    "RSS MiB per worker | open fds per worker |\n"
    "| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"
)


def summary(windows: list[Window]) -> list[str]:
    if len(windows) < 2:
        return []
    first, last = windows[0], windows[-1]
    growth = [
        f"{(b - a) / a:+.1%}"
        for a, b in zip(first.rss_mib, last.rss_mib, strict=False)
        if a and not math.isnan(b)
    ]
    p99_first, p99_last = pct(first.latencies_ms, 0.99), pct(last.latencies_ms, 0.99)
    errors: Counter[str] = Counter()
    said: dict[str, str] = {}
    by_kind: dict[str, list[float]] = {}
    for w in windows:
        errors.update(w.errors)
        for name, text in w.said.items():
            said.setdefault(name, f"window {w.index}, {text}")
        for kind, values in w.by_kind.items():
            by_kind.setdefault(kind, []).extend(values)
    kinds_p99 = ", ".join(f"{kind} {pct(values, 0.99):.0f}" for kind, values in sorted(by_kind.items()))
    return [
        "- RSS growth of each worker from the end of the first window to the end of the last: "
        + ", ".join(growth),
        f"- p99 drift from the first window to the last: {(p99_last - p99_first) / p99_first:+.1%}",
        f"- errors in all: {dict(errors) or 'none'}",
        *(f"  - {name}, the first: {text}" for name, text in said.items()),
        f"- p99 ms by kind over the whole run: {kinds_p99}",
        f"- the schedule fell behind by up to {max(w.late_ms for w in windows):.0f} ms",
    ]


async def run(args: argparse.Namespace) -> None:
    soft, hard = raise_fd_limit()
    settings = replace(Settings.from_env(), keyspace=f"soak_{uuid.uuid4().hex[:10]}")
    started = time.monotonic()
    print(
        f"soak: {args.minutes:g} min in windows of {args.window:g} min; {os.cpu_count()} cores, load average "
        f"{load_average()}, open files {soft}/{hard}",
        flush=True,
    )
    windows: list[Window] = []
    async with contextlib.AsyncExitStack() as stack:
        redis = await stack.enter_async_context(own_redis())
        world = await stack.enter_async_context(world_of(settings, [args.users], 0, redis.url))
        room = world.rooms[args.users]
        gw = await stack.enter_async_context(gateway(world, 2))
        http = await stack.enter_async_context(aiohttp.ClientSession())
        soak = Soak(gw, world.members, room, args)
        soak.http = http
        print(
            f"ready in {time.monotonic() - started:.0f} s: {len(world.members)} users in one room, 2 workers"
        )
        print(HEADER, flush=True)
        churn = asyncio.create_task(soak.churn())
        pick = kinds(soak.random)
        end = time.monotonic() + args.minutes * 60
        try:
            while time.monotonic() < end - 0.5:
                window_end = min(end, time.monotonic() + args.window * 60)
                schedules = [soak.schedule(args.rate, lambda: soak.request(pick()), window_end)]
                if args.uploads:
                    schedules.append(soak.schedule(args.uploads, soak.upload, window_end))
                await asyncio.gather(*schedules)
                windows.append(soak.close_window())
                print(line(windows[-1]), flush=True)
        finally:
            churn.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await churn
            await asyncio.gather(*list(soak.pending), return_exceptions=True)
            for socket in soak.sockets:
                socket.close()
            soak.client.close()
    print(
        f"\n## soak ({os.cpu_count()} cores; 2 workers with Redis; {args.minutes:g} min, windows of "
        f"{args.window:g} min; {args.rate:g} requests/s + {args.uploads:g} uploads/s; "
        f"{args.sockets} sockets, "
        f"{args.churn}/s replaced; load average {load_average()} at the end; "
        f"{time.monotonic() - started:.0f} s in all)\n"
    )
    print(HEADER)
    for w in windows:
        print(line(w))
    print()
    for text in summary(windows):
        print(text)
    if gw.errors:
        print(f"- the gateway logged: {gw.errors[:8]}")


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    summary_line = (__doc__ or "").split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="scripts/soak", description=summary_line)
    add = parser.add_argument
    add("minutes", type=float, nargs="?", default=30.0, help="how long (default 30)")
    add("--window", type=float, default=5.0, help="minutes per reported window (default 5)")
    add("--rate", type=float, default=20.0, help="GraphQL requests per second, all kinds together")
    add("--uploads", type=float, default=0.2, help="emails with an attachment per second")
    add("--sockets", type=int, default=40, help="subscribed sockets kept open")
    add("--churn", type=int, default=2, help="sockets closed and replaced every second")
    add("--users", type=int, default=60, help="users, all in one room")
    add("--seed", type=int, default=31, help="the random choices' seed")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.window <= 0:
        parser.error("minutes and --window must be positive")
    return args


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(arguments()))
