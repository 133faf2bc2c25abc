"""Graceful shutdown: what a process is still doing, and how it stops doing it.

On SIGTERM the server (``gateway/server/serve.py``) calls :meth:`Drain.begin` and stops
listening; ``/readyz`` answers 503 from that moment, so a load balancer stops
sending new work. Then :meth:`Drain.finish`:

- every WebSocket is closed with 1001 (going away): a subscription never ends
  by itself, and its client reconnects to another process at once;
- requests in flight, counted by :meth:`Drain.middleware`, finish, for at most
  ``GATEWAY_DRAIN_SECONDS``. Connections already open are still served
  meanwhile, each answer carrying ``Connection: close`` so the client moves on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable

from aiohttp import WSCloseCode, web

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Probes are answered at once and never hold a drain, so they are not counted.
UNCOUNTED_PATHS = frozenset({"/healthz", "/readyz"})


class Drain:
    def __init__(self) -> None:
        self.draining = False
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._sockets: weakref.WeakSet[web.WebSocketResponse] = weakref.WeakSet()

    @property
    def in_flight(self) -> int:
        """Requests being handled, probes aside."""
        return self._in_flight

    def track_socket(self, socket: web.WebSocketResponse) -> None:
        self._sockets.add(socket)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Counts HTTP requests in flight; WebSocket connections are tracked as sockets instead."""
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return await handler(request)
        if request.path in UNCOUNTED_PATHS:
            response = await handler(request)
            if self.draining:
                response.force_close()
            return response
        self._in_flight += 1
        self._idle.clear()
        try:
            response = await handler(request)
            if self.draining:
                response.force_close()
            return response
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    def begin(self) -> None:
        self.draining = True

    async def finish(self, seconds: float) -> bool:
        """Close WebSockets with 1001 and wait up to ``seconds`` for requests in flight;
        whether they all finished."""
        self.begin()
        sockets = [s for s in self._sockets if not s.closed]
        if sockets:
            log.info("draining: closing %d WebSocket connection(s) with 1001", len(sockets))
        await asyncio.gather(
            *(s.close(code=WSCloseCode.GOING_AWAY, message=b"server shutting down") for s in sockets),
            return_exceptions=True,
        )
        if self._in_flight:
            log.info("draining: waiting up to %.0fs for %d request(s) in flight", seconds, self._in_flight)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._idle.wait()
        if self._in_flight:
            log.warning("draining: %d request(s) unfinished after %.0fs", self._in_flight, seconds)
            return False
        return True
