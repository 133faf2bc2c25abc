"""A load process of the delivery benchmark: subscriber sockets, driven over stdin and stdout.

``python -m bench.live_load`` reads one JSON line, its sockets::

    {"host": "127.0.0.1", "port": 8000, "path": "/graphql",
     "subscription": {"query": "...", "variables": {...}},
     "sockets": [[index, token], ...], "concurrency": 50}

opens them (``bench/ws_client.py``), ``concurrency`` handshakes at a time, and answers
``{"subscribed": n, "failed": [why, ...]}``. Then each JSON line it reads is a command,
answered with one JSON line:

- ``{"cmd": "status", "probe": k}``: how many sockets have seen probe ``k`` or a later one,
  how many measured messages arrived, how many sockets are still open, and why the first
  closed ones ended;
- ``{"cmd": "dump", "path": p}``: the arrivals, as three arrays written one after the other
  to ``p`` (socket indexes ``i``, sequence numbers ``q``, arrival times ``d`` on the
  system-wide monotonic clock) after their common length (``q``);
- ``{"cmd": "close"}``: closes every socket and exits.

It runs on uvloop, as the gateway does, so that its own CPU per frame is what a lean client
costs rather than what the default loop does.
"""

from __future__ import annotations

import asyncio
import sys
from array import array
from typing import Any

import orjson
import uvloop

from bench.ws_client import Arrivals, Subscriber, subscribe

#: How many closed sockets' reasons a status lists.
REASONS = 5


async def _open_all(config: dict[str, Any], arrivals: Arrivals) -> tuple[list[Subscriber], list[str]]:
    sockets: list[list[Any]] = config["sockets"]
    limit = asyncio.Semaphore(int(config.get("concurrency", 50)))
    failed: list[str] = []

    async def one(position: int, token: str) -> Subscriber | None:
        async with limit:
            try:
                return await subscribe(
                    position, config["host"], int(config["port"]), config["path"], token,
                    config["subscription"], arrivals,
                )  # fmt: skip
            except (OSError, TimeoutError) as error:
                failed.append(f"socket {position}: {error or type(error).__name__}")
                return None

    opened = await asyncio.gather(*(one(position, token) for position, (_, token) in enumerate(sockets)))
    return [s for s in opened if s is not None], failed


def _status(subscribers: list[Subscriber], arrivals: Arrivals, probe: int) -> dict[str, Any]:
    ended = [f"socket {s.index}: {s.ended}" for s in subscribers if s.closed]
    return {
        "probed": sum(1 for seen in arrivals.probes if seen >= probe),
        "received": len(arrivals),
        "open": sum(1 for s in subscribers if not s.closed),
        "ended": ended[:REASONS],
        "unexpected": arrivals.unexpected[:REASONS],
        "unexpected_count": len(arrivals.unexpected),
    }


def _dump(arrivals: Arrivals, sockets: list[list[Any]], path: str) -> int:
    indexes = array("i", (int(sockets[position][0]) for position in arrivals.sockets))
    with open(path, "wb") as out:
        array("q", [len(arrivals)]).tofile(out)
        indexes.tofile(out)
        arrivals.seqs.tofile(out)
        arrivals.times.tofile(out)
    return len(arrivals)


def read_dump(path: str) -> tuple[array[int], array[int], array[float]]:
    """The (socket indexes, sequence numbers, arrival times) a load process dumped."""
    with open(path, "rb") as source:
        count = array("q")
        count.fromfile(source, 1)
        indexes, seqs, times = array("i"), array("q"), array("d")
        indexes.fromfile(source, count[0])
        seqs.fromfile(source, count[0])
        times.fromfile(source, count[0])
    return indexes, seqs, times


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    def answer(message: dict[str, Any]) -> None:
        sys.stdout.buffer.write(orjson.dumps(message) + b"\n")
        sys.stdout.flush()

    config = orjson.loads(await reader.readline())
    arrivals = Arrivals(len(config["sockets"]))
    subscribers, failed = await _open_all(config, arrivals)
    answer({"subscribed": len(subscribers), "failed": failed[:REASONS], "failed_count": len(failed)})
    while line := await reader.readline():
        command = orjson.loads(line)
        if command["cmd"] == "status":
            answer(_status(subscribers, arrivals, int(command.get("probe", 0))))
        elif command["cmd"] == "dump":
            answer({"rows": _dump(arrivals, config["sockets"], command["path"])})
        elif command["cmd"] == "close":
            break
    for subscriber in subscribers:
        subscriber.close()
    await asyncio.sleep(0.1)
    answer({"closed": len(subscribers)})


if __name__ == "__main__":
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())
