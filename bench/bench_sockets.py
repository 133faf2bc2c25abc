"""Sockets at scale: as many idle authenticated WebSockets on one process as the machine allows
(up to ``--sockets``, 10 000 by default), what each costs, and a room message delivered to all.

Every socket belongs to a user of its own, signed in (a session each, written on the driver), and
subscribes to ``roomMessages`` of one room they all joined (the room cap,
``GATEWAY_ROOM_MAX_PARTICIPANTS``, is raised to the socket count for the run, and
``GATEWAY_MAX_SOCKETS`` and the per-address cap to hold them: every socket comes from
127.0.0.1). The sockets live in two load processes of their own (``bench/live_load.py``);
the soft limit on open files of this process, and so of the load processes and of the gateway
it starts, is raised to the hard limit first.

It is the delivery benchmark's room case (``bench/live_case.py``: probes until every
subscription is live) at one size, one process and a low rate, and prints, beside the open-file
limits:

- sockets asked for and subscribed, and the time it took to open them (or, when not every
  socket could be opened, what stopped it);
- the gateway's RSS before the sockets, with them open and idle, and per socket;
- the cores the gateway keeps busy with every socket open and nothing sent (``--idle`` seconds:
  its keep-alive pings and their pongs, the session watch's timers), and the load average;
- each room message's send-to-receive latency to every socket (p50, p99, max), deliveries lost,
  and the gateway's CPU per 1000 deliveries, at ``--rate`` messages a second for ``--duration``
  seconds.

Run: ``scripts/bench sockets`` (``-- --help``; ``-- --sockets 2000`` for a shorter run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace

from bench.bench_overload import raise_fd_limit
from bench.live_case import load_average, run_case
from bench.live_world import Case, world_of
from gateway.settings import Settings


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    summary = (__doc__ or "").split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="bench.bench_sockets", description=summary)
    add = parser.add_argument
    add("--sockets", type=int, default=10000, help="sockets to open (at most)")
    add("--rate", type=float, default=1.0, help="room messages per second while measuring delivery")
    add("--duration", type=float, default=10.0, help="seconds of sending")
    add("--grace", type=float, default=20.0, help="seconds after the last send to wait for stragglers")
    add("--idle", type=float, default=30.0, help="seconds the idle gateway's CPU is read over")
    add("--join-concurrency", type=int, default=16, help="joins at a time while preparing the room")
    add("--load-processes", type=int, default=2, help="processes holding the sockets")
    return parser.parse_args(argv)


async def main(argv: Sequence[str] | None = None) -> None:
    args = arguments(argv)
    soft, hard = raise_fd_limit()
    size = args.sockets
    settings = replace(
        Settings.from_env(), keyspace=f"bench_{uuid.uuid4().hex[:10]}", room_max_participants=size
    )
    env = {
        "GATEWAY_ROOM_MAX_PARTICIPANTS": str(size),
        "GATEWAY_MAX_SOCKETS": str(size + 100),
        "GATEWAY_MAX_SOCKETS_PER_ADDRESS": str(size + 100),
    }
    started = time.monotonic()
    print(f"sockets: {os.cpu_count()} cores, load average {load_average()}, open files {soft}/{hard}")
    async with world_of(settings, [size], 0) as world:
        print(
            f"prepared {len(world.members)} users in a room in {time.monotonic() - started:.0f} s", flush=True
        )
        case = Case("room", size, args.rate, 1)
        try:
            outcome = await run_case(
                world,
                case,
                duration=args.duration,
                grace=args.grace,
                load_processes=args.load_processes,
                settings_env=env,
                idle_seconds=args.idle,
            )
        except RuntimeError as error:
            print(f"\nstopped: {error}")
            return
    o = outcome
    print(
        f"\n## sockets ({os.cpu_count()} cores; open files soft/hard {soft}/{hard} for the gateway and "
        f"the load processes; {args.rate:g} room message/s for {args.duration:g} s; load average "
        f"{load_average()} at the end, {o.load_average:.1f} at the start; "
        f"{time.monotonic() - started:.0f} s in all)\n"
    )
    columns = (
        "sockets", "gateway RSS MiB before/idle/after", "RSS KiB/socket", "idle gateway cores",
        "deliveries expected/received/lost", "p50 ms", "p99 ms", "max ms", "gateway CPU s/1000 deliveries",
    )  # fmt: skip
    print("| " + " | ".join(columns) + " |")
    print("| " + " | ".join("---:" for _ in columns) + " |")
    idle = f"{o.idle_cores:.3f}" if o.idle_cores is not None else "n/a"
    rss = f"{o.rss_before_kib / 1024:.0f}/{o.rss_idle_kib / 1024:.0f}/{o.rss_after_kib / 1024:.0f}"
    cells = [
        size, rss, f"{o.rss_per_socket_kib:.1f}", idle, f"{o.expected}/{o.received}/{o.lost}",
        f"{o.pct(0.5):.1f}", f"{o.pct(0.99):.1f}", f"{max(o.latencies_ms, default=float('nan')):.1f}",
        f"{o.per_1000(o.cpu.gateway):.3f}",
    ]  # fmt: skip
    print("| " + " | ".join(str(c) for c in cells) + " |")
    print()
    for note in o.notes[:6]:
        print(f"- {note}")


if __name__ == "__main__":
    asyncio.run(main())
