"""Many subscribed WebSockets in a process of their own (aiohttp's client), so that what the
gateway's process allocates for them is all the test process measures.

``python -m tests.support.ws_sockets`` reads one JSON line: ``{"url", "tokens", "query",
"variables"}``; opens a ``graphql-transport-ws`` socket per token, each acknowledged and
subscribed, then prints ``ready``. The next line it reads (or the end of its input) closes
them all, and it prints ``closed`` and exits: as the protocol says, or when the line is
``drop``, without a word (each connection shut down, no close frame sent or awaited).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from typing import Any

import aiohttp

AT_ONCE = 20


async def _open(
    http: aiohttp.ClientSession, config: dict[str, Any], token: str, limit: asyncio.Semaphore
) -> aiohttp.ClientWebSocketResponse:
    async with limit:
        ws = await http.ws_connect(config["url"], protocols=["graphql-transport-ws"], heartbeat=None)
        await ws.send_json({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}})
        answer = await ws.receive_json(timeout=60)
        if answer.get("type") != "connection_ack":
            raise RuntimeError(f"not acknowledged: {answer}")
        payload = {"query": config["query"], "variables": config.get("variables")}
        await ws.send_json({"id": "1", "type": "subscribe", "payload": payload})
        return ws


async def _read(ws: aiohttp.ClientWebSocketResponse) -> None:
    """Answer the server's pings (aiohttp does, while something reads)."""
    async for _ in ws:
        pass


async def main() -> None:
    loop = asyncio.get_running_loop()
    config = json.loads(await loop.run_in_executor(None, sys.stdin.readline))
    limit = asyncio.Semaphore(AT_ONCE)
    async with aiohttp.ClientSession() as http:
        sockets = await asyncio.gather(*(_open(http, config, token, limit) for token in config["tokens"]))
        readers = [asyncio.create_task(_read(ws)) for ws in sockets]
        print("ready", flush=True)
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if line.strip() == "drop":
            for ws in sockets:
                connection = ws.get_extra_info("socket")
                if connection is None:
                    raise RuntimeError("a socket without its connection cannot be dropped")
                connection.shutdown(socket.SHUT_RDWR)
        else:
            await asyncio.gather(*(ws.close() for ws in sockets))
        await asyncio.gather(*readers, return_exceptions=True)
    print("closed", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
