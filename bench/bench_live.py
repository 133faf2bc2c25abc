"""Live delivery: what it costs the gateway to deliver a message to every socket subscribed to it.

Two scenarios, each at one gateway process and at ``--workers 2`` with a Redis broker of the
benchmark's own, over a throwaway keyspace:

- **room**: N users (default 200 and 1000, the room cap ``GATEWAY_ROOM_MAX_PARTICIPANTS``) all
  in one room, each with one socket subscribed to ``roomMessages``; one of them posts
  (``postRoomMessage`` over HTTP), and every message is N deliveries, the poster's own
  socket included;
- **pairs**: K one-to-one pairs; one of each pair has a socket subscribed to
  ``messageReceived``, the other sends it direct messages (``sendMessage`` over HTTP), the
  pairs taking turns; every message is one delivery.

Messages go out at a fixed rate R (all senders together) on an open-loop schedule: send
times are fixed in advance and nothing waits for a delivery or for the previous send's
answer, so a gateway that falls behind shows as latency and losses rather than as a slower
sender. Each message's content carries its sequence number (``seq=<n>;``); the sender
records when it sent it, the subscriber sockets when it arrived (both on the system-wide
monotonic clock), and after the last send the benchmark waits at most ``--grace`` seconds
for stragglers. A delivery that did not arrive by then is lost, and reported: "lost" is
"not received within the grace", whether the gateway dropped it or was still behind.

Before a case is measured, probe messages (``probe=<n>;``) are sent until every socket has
received one: every subscription is live, on every process, before the first measured send
(``bench/live_case.py`` lists a case's steps).

The subscriber sockets live in one or two load processes of their own (``bench/live_load.py``,
lean sockets of ``bench/ws_client.py`` on uvloop); the sender is this process. Per case it
prints, in two tables:

- deliveries expected, received and lost; deliveries per second (received, over the time
  from the first send to the last arrival); send-to-receive latency p50, p99 and max; the
  send mutation's p99; how late the sender was on its schedule at worst;
- CPU-seconds per 1000 deliveries of the gateway processes (the sends' own included: for
  the pairs, one send per delivery) and of the load generator (its socket processes, and
  this one, the sender), read from /proc over the sends and the wait for stragglers, and how
  many cores each kept busy, beside the node, the benchmark's Redis and the rest of the
  machine (other work shares it: the load average is shown too); CQL statements per
  delivery as the gateway's ``/metrics`` counts them, and Cassandra requests per delivery
  as the node counts them for the benchmark's keyspace (below); RSS per idle subscribed
  socket (KiB: the gateway processes' RSS with the sockets open and subscribed, minus before
  they connected, over N) and the gateway's RSS before, idle and after the case.

CQL per delivery, two ways, both counted over two messages to every socket sent before the
measured ones, each awaited until every socket had it (so every send has answered and every
delivery has arrived when the counts are read, however far behind the measured sends leave
the gateway):

- ``/metrics``: the growth of ``gateway_subscription_delivery_cql_statements`` (the live
  hub's count of what it ran to deliver), plus whatever ``gateway_cql_statements`` (queries
  and mutations, counted when they answer) grew by beyond the statements the sends reported
  in their own ``extensions.cql``, over the deliveries; ``gateway_subscription_deliveries``
  is checked against the deliveries that arrived. A gateway from before the hub has neither
  delivery counter and counted a subscription's statements nowhere
  (``GatewayMetrics.subscription_ended`` took none): the column then says ``not counted``
  rather than a 0 that would read as "no CQL per delivery".
- The node's own count: the reads, range reads and writes it coordinated for the benchmark's
  keyspace (``system_views.coordinator_*_latency``, Cassandra 4.1 and later), less what the
  sends cost (measured before the sockets connect, by sending messages nobody is subscribed
  to) and what the idle gateway asks meanwhile (measured with the sockets open), over the
  deliveries. It counts a multi-partition ``IN`` read once per partition and an LWT not at
  all; the tables the requests went to are listed under the tables.

Each case starts fresh gateway processes, so a backlog one case leaves cannot slow the next.
A rate is skipped for a scenario, size and worker count whose lower rate already lost more
than ``--skip-after`` of its deliveries (it clearly cannot keep up); the output says so.

Run: ``scripts/bench live`` (or ``.venv/bin/python -m bench.bench_live``; ``--help`` for the
sizes, rates, worker counts and times); ``--quick`` is one short case (N=200, R=5, 5 s, one
process) for a smoke test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace

import orjson

from bench.live_case import TWO_LOAD_PROCESSES_FROM, Outcome, load_average, run_case
from bench.live_world import Case, World, own_redis, world_of
from gateway.settings import Settings


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


DELIVERY_COLUMNS = (
    "case", "sent", "expected", "received", "lost", "deliveries/s", "p50 ms", "p99 ms", "max ms",
    "send p99 ms", "sender late ms", "load average",
)  # fmt: skip
COST_COLUMNS = (
    "case", "gateway CPU s/1000", "load CPU s/1000: sockets + sender",
    "cores: gateway / sockets (processes) / sender / node / Redis / other", "CQL/delivery (/metrics)",
    "node requests/delivery", "RSS KiB/socket", "gateway RSS MiB before/idle/after",
)  # fmt: skip


def report(outcomes: list[Outcome], skipped: list[str], grace: float) -> None:
    print("\n### Delivery\n")
    print(_row(DELIVERY_COLUMNS))
    print(_row(["---", *["---:"] * (len(DELIVERY_COLUMNS) - 1)]))
    for o in outcomes:
        lost = f"{o.lost} ({o.lost / o.expected:.0%})" if o.expected and o.lost else str(o.lost)
        worst = max(o.latencies_ms, default=float("nan"))
        print(_row([
            o.case.label, o.sent, o.expected, o.received, lost, f"{o.deliveries_per_second:.0f}",
            f"{o.pct(0.5):.1f}", f"{o.pct(0.99):.1f}", f"{worst:.1f}", f"{o.send_p99:.1f}",
            f"{o.sender_late_ms:.1f}", f"{o.load_average:.1f}",
        ]))  # fmt: skip
    print("\n### Cost\n")
    print(_row(COST_COLUMNS))
    print(_row(["---", "---:", "---:", "---", *["---:"] * (len(COST_COLUMNS) - 4)]))
    for o in outcomes:
        c = o.cpu
        other = c.machine - c.gateway - c.sockets - c.sender - c.node - c.redis
        cores = (
            f"{o.cores(c.gateway):.2f} / {o.cores(c.sockets):.2f} ({o.load_processes}) / "
            f"{o.cores(c.sender):.2f} / {o.cores(c.node):.2f} / {o.cores(c.redis):.2f} / {o.cores(other):.2f}"
        )
        node = f"{o.node_requests:.3f}" if o.node_requests is not None else "n/a"
        rss = f"{o.rss_before_kib / 1024:.0f}/{o.rss_idle_kib / 1024:.0f}/{o.rss_after_kib / 1024:.0f}"
        print(_row([
            o.case.label, f"{o.per_1000(c.gateway):.3f}",
            f"{o.per_1000(c.sockets):.3f} + {o.per_1000(c.sender):.3f}", cores, o.cql_per_delivery, node,
            f"{o.rss_per_socket_kib:.1f}", rss,
        ]))  # fmt: skip
    print()
    print(f"- lost: not received within {grace:g} s of the last send.")
    if any(o.cql_per_delivery == "not counted" for o in outcomes):
        print(
            "- CQL/delivery (/metrics) 'not counted': this gateway has no delivery counter, and "
            "gateway_cql_statements grew by exactly the statements the sends reported while the node "
            "saw the deliveries' requests; it counts queries and mutations, not what a subscription "
            "runs per event."
        )
    for o in outcomes:
        if o.node_tables:
            tables = ", ".join(f"{k} {v:.3f}" for k, v in o.node_tables.items())
            print(f"- {o.case.label}: node requests per delivery by table: {tables}")
        for note in o.notes[:6]:
            print(f"- {o.case.label}: {note}")
    for line in skipped:
        print(f"- skipped: {line}")
    summary = os.environ.get("BENCH_SUMMARY")
    if summary:
        with open(summary, "a") as out:
            for o in outcomes:
                out.write(orjson.dumps(summary_row(o)).decode() + "\n")


def summary_row(o: Outcome) -> dict[str, object]:
    """One case as a row of the ``BENCH_SUMMARY`` file (``scripts/bench --json`` keeps them):
    CPU per 1000 deliveries, cores over the measured window, and the per-socket memory."""
    c = o.cpu
    cql = o.cql_per_delivery
    return {
        "report": "live delivery", "name": f"live: {o.case.label}", "scenario": o.case.scenario,
        "size": o.case.size, "rate": o.case.rate, "workers": o.case.workers, "sent": o.sent,
        "expected": o.expected, "received": o.received, "seconds": o.seconds, "window": o.window,
        "deliveries_per_second": o.deliveries_per_second,
        "gateway_cpu_per_1000": o.per_1000(c.gateway), "node_cpu_per_1000": o.per_1000(c.node),
        "redis_cpu": c.redis, "gateway_cores": o.cores(c.gateway), "node_cores": o.cores(c.node),
        "cql_per_delivery": float(cql) if cql.replace(".", "", 1).isdigit() else None,
        "node_requests_per_delivery": o.node_requests, "rss_per_socket_kib": o.rss_per_socket_kib,
        "load_average": o.load_average,
    }  # fmt: skip


def _numbers(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.bench_live", description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="one short case: room N=200, R=5, 5 s, one process")
    add("--sizes", default="200,1000", help="room sizes, comma-separated (0: no room cases)")
    add("--rates", default="5,20,50", help="room messages per second, comma-separated")
    add("--pairs", type=int, default=100, help="one-to-one pairs (0: no pair cases)")
    add("--pair-rates", default="20,50", help="direct messages per second, all pairs together")
    add("--workers", default="1,2", help="gateway processes per case, comma-separated")
    add("--duration", type=float, default=10.0, help="seconds of sending per case")
    add("--grace", type=float, default=10.0, help="seconds after the last send to wait for stragglers")
    add(
        "--load-processes", type=int, default=0,
        help=f"socket processes (default: 2 from {TWO_LOAD_PROCESSES_FROM} sockets, else 1)",
    )  # fmt: skip
    add(
        "--skip-after", type=float, default=0.1,
        help="skip the higher rates of a scenario, size and worker count once one lost more than "
        "this share of its deliveries (1: never skip)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.rates, args.pairs, args.workers = "200", "5", 0, "1"
        args.duration, args.grace = 5.0, 5.0
    return args


def cases_of(args: argparse.Namespace) -> list[Case]:
    workers = [int(w) for w in _numbers(args.workers)]
    rates = sorted(_numbers(args.rates))
    cases = [
        Case("room", int(size), rate, w)
        for w in workers
        for size in _numbers(args.sizes)
        if size
        for rate in rates
    ]
    if args.pairs:
        pair_rates = sorted(_numbers(args.pair_rates))
        cases += [Case("pairs", args.pairs, rate, w) for w in workers for rate in pair_rates]
    return cases


async def run_cases(
    world: World, cases: list[Case], args: argparse.Namespace
) -> tuple[list[Outcome], list[str]]:
    """Each case in turn, but not a rate that a lower one already showed cannot be kept up with."""
    outcomes: list[Outcome] = []
    skipped: list[str] = []
    behind: dict[tuple[str, int, int], Outcome] = {}
    for case in cases:
        lagging = behind.get((case.scenario, case.size, case.workers))
        if lagging is not None:
            skipped.append(
                f"{case.label}: at R={lagging.case.rate:g} it already lost {lagging.lost} of "
                f"{lagging.expected} deliveries"
            )
            print(f"skip {case.label}", flush=True)
            continue
        print(f"{case.label} (load average {load_average()})", flush=True)
        outcome = await run_case(
            world, case, duration=args.duration, grace=args.grace, load_processes=args.load_processes or None
        )
        outcomes.append(outcome)
        print(
            f"  {outcome.received}/{outcome.expected} delivered, p99 {outcome.pct(0.99):.0f} ms, "
            f"gateway {outcome.cores(outcome.cpu.gateway):.2f} cores",
            flush=True,
        )
        if outcome.expected and outcome.lost > args.skip_after * outcome.expected:
            behind[(case.scenario, case.size, case.workers)] = outcome
    return outcomes, skipped


async def main(argv: Sequence[str] | None = None) -> None:
    args = arguments(argv)
    cases = cases_of(args)
    settings = replace(Settings.from_env(), keyspace=f"bench_{uuid.uuid4().hex[:10]}")
    started = time.monotonic()
    print(f"live delivery: {os.cpu_count()} cores, load average {load_average()} at the start", flush=True)
    sizes = sorted({c.size for c in cases if c.scenario == "room"})
    pairs = max((c.size for c in cases if c.scenario == "pairs"), default=0)
    async with contextlib.AsyncExitStack() as stack:
        redis = await stack.enter_async_context(own_redis()) if any(c.workers > 1 for c in cases) else None
        world = await stack.enter_async_context(world_of(settings, sizes, pairs, redis.url if redis else ""))
        world.redis_pid = redis.status().pid if redis else None
        print(f"prepared {len(world.members)} users, rooms of {sizes} in {time.monotonic() - started:.0f} s")
        outcomes, skipped = await run_cases(world, cases, args)
    print(
        f"\n## live delivery ({os.cpu_count()} cores; {args.duration:g} s of sending per case, "
        f"{args.grace:g} s grace; load average {load_average()} at the end, "
        f"{time.monotonic() - started:.0f} s in all)"
    )
    report(outcomes, skipped, args.grace)


if __name__ == "__main__":
    asyncio.run(main())
