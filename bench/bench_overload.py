"""Overload: more traffic than one process can serve, shed (``GATEWAY_MAX_IN_FLIGHT``) or queued.

The request is the conversation query (``bench/bench_messenger.py``'s ``CONVERSATION``: the
viewer's conversation with one partner, its unread count and its newest 50 messages with
their senders), from one signed-in user, against one ``gateway serve`` process over a
throwaway keyspace.

1. **The sustainable rate.** Each process is driven closed-loop (``--concurrency`` requests
   in flight, each sent as soon as the previous answered) for ``--probe`` seconds: that is its
   peak throughput P. The sustainable rate R is ``--load`` of the lower P (0.7 by default): a
   rate it serves with room to spare, as a capacity plan would run it. Open-loop at P itself,
   any hiccup is a queue that never drains.
2. **Open-loop loads.** R, 2R and 3R are offered on an open-loop schedule: send times are fixed
   in advance, whatever the gateway does, each request on a keep-alive connection of its own
   while it is in flight (a new one when none is idle); then R again at once, right after the
   3R schedule ends, without waiting for what 3R left in flight (the recovery). A request
   not answered within ``--timeout`` seconds is given up (the client closes its connection).
3. **Shed, and the baseline.** The same loads against two processes, up side by side: one
   with ``GATEWAY_MAX_IN_FLIGHT=--bound`` (shedding on), one with both bounds off (``0``: every
   request is taken and queued). They take turns load by load (R on one, then on the other,
   then 2R ...), so that both meet the same stretches of a machine shared with other work.

Per load it prints offered, served, refused (503) and otherwise failed or given up per
second; p50 and p99 of the served requests, timed from their scheduled send time (so a
generator that falls behind shows as latency, not as a gentler load); p99 of the refusals;
the gateway's cores busy; its RSS before and after. The recovery row adds the p99 of the
requests of its first second.

Run: ``scripts/bench overload`` (``-- --help`` for the options; ``-- --quick`` for a short run).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import resource
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from bench.bench_messenger import CONVERSATION
from bench.client import GraphQLClient, HttpError
from bench.harness import _process_tree_cpu
from bench.live_case import Gateway, gateway, load_average
from bench.live_world import SEND, Member, world_of
from gateway.settings import Settings

#: Messages in the measured conversation: its page of 50 is full.
HISTORY = 60


def raise_fd_limit() -> tuple[int, int]:
    """The soft limit on open files raised to the hard one; (soft, hard) after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def pct(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class Phase:
    label: str
    rate: float
    seconds: float
    offered: int = 0
    served_ms: list[float] = field(default_factory=list)
    #: (scheduled offset from the phase's start, ms) of served requests, for the first-second p99.
    served_at: list[tuple[float, float]] = field(default_factory=list)
    refused_ms: list[float] = field(default_factory=list)
    failed: dict[str, int] = field(default_factory=dict)
    given_up: int = 0
    late_ms: float = 0.0
    cores: float = 0.0
    rss_before_mib: float = 0.0
    rss_after_mib: float = 0.0

    def per_second(self, count: int) -> float:
        return count / self.seconds

    def first_second_p99(self) -> float:
        return pct([ms for at, ms in self.served_at if at < 1.0], 0.99)


class Load:
    """The load generator: the conversation query, as ``member`` asks it of ``partner``."""

    def __init__(self, gw: Gateway, member: Member, partner: str, timeout: float) -> None:
        self.client = GraphQLClient(f"{gw.base}/graphql")
        self.gw = gw
        self.token = member.token
        self.variables = {"with": partner}
        self.timeout = timeout
        self.pending: set[asyncio.Task[None]] = set()

    async def one(self) -> tuple[int, bool]:
        status, body = await self.client.post(CONVERSATION, self.variables, self.token)
        return status, not body.get("errors") and body.get("data") is not None

    async def closed_loop(self, concurrency: int, seconds: float) -> float:
        """Requests per second with ``concurrency`` in flight, each sent when the last answered."""
        done = 0
        end = time.monotonic() + seconds

        async def worker() -> None:
            nonlocal done
            while time.monotonic() < end:
                status, ok = await self.one()
                if status != 200 or not ok:
                    raise RuntimeError(f"the conversation query failed closed-loop: {status}")
                done += 1

        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return done / (time.monotonic() - started)

    async def _timed(self, phase: Phase, start: float, due: float) -> None:
        try:
            async with asyncio.timeout(self.timeout):
                status, ok = await self.one()
        except TimeoutError:
            phase.given_up += 1
            return
        except (HttpError, OSError) as error:
            kind = type(error).__name__
            phase.failed[kind] = phase.failed.get(kind, 0) + 1
            return
        ms = (time.monotonic() - due) * 1000
        if status == 200 and ok:
            phase.served_ms.append(ms)
            phase.served_at.append((due - start, ms))
        elif status == 503:
            phase.refused_ms.append(ms)
        else:
            kind = f"HTTP {status}" if status != 200 else "GraphQL error"
            phase.failed[kind] = phase.failed.get(kind, 0) + 1

    async def open_loop(self, phase: Phase) -> None:
        """Send ``phase.rate`` requests a second for ``phase.seconds`` on a fixed schedule;
        returns when the schedule ends (the answers still come in: :meth:`settle`)."""
        phase.rss_before_mib = self.gw.rss_kib / 1024
        cpu_before = _process_tree_cpu(self.gw.pid)
        start = time.monotonic()
        total = int(phase.rate * phase.seconds)
        for n in range(total):
            due = start + n / phase.rate
            now = time.monotonic()
            if due > now:
                await asyncio.sleep(due - now)
            else:
                phase.late_ms = max(phase.late_ms, (now - due) * 1000)
            task = asyncio.create_task(self._timed(phase, start, due))
            self.pending.add(task)
            task.add_done_callback(self.pending.discard)
        phase.offered = total
        elapsed = time.monotonic() - start
        phase.cores = (_process_tree_cpu(self.gw.pid) - cpu_before) / elapsed
        phase.rss_after_mib = self.gw.rss_kib / 1024

    async def settle(self) -> None:
        """Until every request sent has been answered or given up."""
        while self.pending:
            await asyncio.gather(*list(self.pending), return_exceptions=True)


async def run_modes(
    loads: list[Load], args: argparse.Namespace, rate: float | None
) -> tuple[list[float], float, list[list[Phase]]]:
    """The loads against each process in turn, load by load, so that the processes meet the
    same stretches of a shared machine; (each one's peak, the rate, each one's phases).
    ``rate`` None: ``--load`` of the lowest peak."""
    peaks = []
    for load in loads:
        # Warm: prepared statements, parsed documents, a pool of open connections.
        await load.closed_loop(args.in_flight, 2.0)
        peaks.append(await load.closed_loop(args.in_flight, args.probe))
    if rate is None:
        rate = min(peaks) * args.load
    phases: list[list[Phase]] = [[] for _ in loads]
    for multiple in (1, 2, 3):
        for load, done in zip(loads, phases, strict=True):
            phase = Phase(f"{multiple}x", rate * multiple, args.duration)
            await load.open_loop(phase)
            if multiple == 3:  # the recovery: 1x at once, what 3x left in flight still coming in
                after = Phase("1x right after 3x", rate, args.duration)
                await load.open_loop(after)
                await load.settle()
                after.rss_after_mib = load.gw.rss_kib / 1024
                done.extend([phase, after])
            else:
                await load.settle()
                done.append(phase)
            await asyncio.sleep(1.0)
    return peaks, rate, phases


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


COLUMNS = (
    "mode", "load", "offered/s", "served/s", "refused/s", "failed/s", "given up", "served p50 ms",
    "served p99 ms", "first-second p99 ms", "refused p99 ms", "gateway cores", "RSS MiB before/after",
)  # fmt: skip


def report(modes: list[tuple[str, list[Phase]]]) -> None:
    print(_row(COLUMNS))
    print(_row(["---", "---", *["---:"] * (len(COLUMNS) - 2)]))
    for mode, phases in modes:
        for p in phases:
            failed = sum(p.failed.values())
            first = f"{p.first_second_p99():.1f}" if p.label.startswith("1x right") else ""
            print(_row([
                mode, p.label, f"{p.per_second(p.offered):.0f}", f"{p.per_second(len(p.served_ms)):.0f}",
                f"{p.per_second(len(p.refused_ms)):.0f}", f"{p.per_second(failed):.1f}", p.given_up,
                f"{pct(p.served_ms, 0.5):.1f}", f"{pct(p.served_ms, 0.99):.1f}", first,
                f"{pct(p.refused_ms, 0.99):.1f}" if p.refused_ms else "",
                f"{p.cores:.2f}", f"{p.rss_before_mib:.0f}/{p.rss_after_mib:.0f}",
            ]))  # fmt: skip
    print()
    for mode, phases in modes:
        for p in phases:
            if p.failed:
                print(f"- {mode} {p.label}: failed {p.failed}")
            if p.late_ms > 50:
                print(
                    f"- {mode} {p.label}: the generator fell behind its schedule by up to {p.late_ms:.0f} ms"
                )
        one, three = phases[0], phases[2]
        ratio = pct(three.served_ms, 0.99) / pct(one.served_ms, 0.99)
        print(f"- {mode}: served p99 at 3x is {ratio:.2f}x its value at 1x")


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.bench_overload", description=(__doc__ or "").split("\n\n")[0]
    )
    add = parser.add_argument
    add("--quick", action="store_true", help="short phases (3 s) for a smoke test")
    add("--bound", type=int, default=8, help="GATEWAY_MAX_IN_FLIGHT of the shedding process")
    add(
        "--concurrency", type=int, default=8,
        help="requests in flight while finding the peak (at most --bound)",
    )  # fmt: skip
    add("--probe", type=float, default=8.0, help="seconds of the closed-loop peak measurement")
    add("--load", type=float, default=0.7, help="the sustainable rate as a share of the peak")
    add("--rate", type=float, default=0.0, help="the sustainable rate (requests/s) instead of measuring it")
    add("--duration", type=float, default=10.0, help="seconds of each open-loop load")
    add("--timeout", type=float, default=10.0, help="seconds after which the client gives a request up")
    add("--no-baseline", action="store_true", help="only the shedding process")
    args = parser.parse_args(argv)
    if args.quick:
        args.probe, args.duration = 3.0, 3.0
    #: Requests in flight while finding the peak: never more than the shedding process admits.
    args.in_flight = min(args.concurrency, args.bound) if args.bound else args.concurrency
    return args


async def main(argv: Sequence[str] | None = None) -> None:
    args = arguments(argv)
    soft, hard = raise_fd_limit()
    settings = replace(Settings.from_env(), keyspace=f"bench_{uuid.uuid4().hex[:10]}")
    started = time.monotonic()
    print(
        f"overload: {os.cpu_count()} cores, load average {load_average()}, open files {soft}/{hard}",
        flush=True,
    )
    rate: float | None = args.rate or None
    shed = {"GATEWAY_MAX_IN_FLIGHT": str(args.bound)}
    queue = {"GATEWAY_MAX_IN_FLIGHT": "0", "GATEWAY_MAX_QUEUED_STATEMENTS": "0"}
    runs = [("shed", shed)] if args.no_baseline else [("shed", shed), ("queued (bounds off)", queue)]
    async with world_of(settings, [], 1) as world, contextlib.AsyncExitStack() as stack:
        owner, partner = world.members[0], world.members[1]
        gateways = [await stack.enter_async_context(gateway(world, 1, env)) for _, env in runs]
        for n in range(HISTORY):
            await gateways[0].client.post(SEND, {"to": owner.login, "c": f"history {n}"}, partner.token)
        loads = [Load(gw, owner, partner.login, args.timeout) for gw in gateways]
        try:
            peaks, rate, phases = await run_modes(loads, args, rate)
        finally:
            for load in loads:
                load.client.close()
    modes = [(mode, done) for (mode, _), done in zip(runs, phases, strict=True)]
    for (mode, _), gw in zip(runs, gateways, strict=True):
        if gw.errors:
            print(f"{mode}: the gateway logged {gw.errors[:5]}")
    peak = " and ".join(f"{p:.0f}/s" for p in peaks)
    print(
        f"\n## overload ({os.cpu_count()} cores; conversation query; closed-loop peak {peak} at "
        f"{args.in_flight} in flight; sustainable rate {rate:.0f}/s ({args.load:g} of the lower); "
        f"GATEWAY_MAX_IN_FLIGHT={args.bound}; {args.duration:g} s per load; load average "
        f"{load_average()}; {time.monotonic() - started:.0f} s in all)\n"
    )
    report(modes)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
