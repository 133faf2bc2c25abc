"""Overload is shed, not queued: how much work one process accepts at once.

A process that takes every request it is sent queues what it cannot serve: each
request waits behind all the others, every answer gets slower, memory grows with
the queue, and clients time out on work the process still does. Instead, before a
request is read, :meth:`Admission.middleware` admits it only while

- fewer than ``GATEWAY_MAX_IN_FLIGHT`` HTTP requests are being handled by the
  process, and
- fewer than ``GATEWAY_MAX_QUEUED_STATEMENTS`` CQL statements are in flight on
  its Cassandra connections (those of WebSocket operations and deliveries too).

Anything else is refused at once: HTTP 503 with ``Retry-After`` (the seconds of
``GATEWAY_SHED_RETRY_AFTER_SECONDS``) and a GraphQL error with ``extensions.code``
``UNAVAILABLE``, ``retrySafe: true`` (nothing of it ran) and ``retryAfter``. The
answer is 503 whatever the client accepts: the refusal does not depend on the
request's content, which it never read, and the GraphQL-over-HTTP spec lets a
server refuse such a request with a 5xx for ``application/json`` too. Every
refusal is counted in ``gateway_requests_shed{reason}`` of ``/metrics``.

The statement bound is checked when a request arrives; the statements of a
request already admitted always run, so a mutation is never cut between its
writes. Not shed: the probes (``/healthz``, ``/readyz``), ``/metrics``, GraphiQL's
static files, CORS preflights (answered from memory; a refused preflight would hide
the 503 of the request after it from the page) and WebSocket upgrades; sockets have
caps of their own per process, address and user (``gateway/http/sockets.py``), and
their operations do not count towards the request bound (their statements count
towards the statement bound).
A bound of 0 turns it off.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson
from aiohttp import hdrs, web

from gateway.http.media import response_media_type

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Paths never shed: they answer from memory, and an operator needs them most under load.
UNSHED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

IN_FLIGHT = "requests"
STATEMENTS = "statements"

SHED_MESSAGE = "The gateway is serving as many requests as it can; try again in {seconds} s."


def shed_body(retry_after: int) -> bytes:
    """The GraphQL answer of a refused request."""
    return orjson.dumps(
        {
            "errors": [
                {
                    "message": SHED_MESSAGE.format(seconds=retry_after),
                    "extensions": {"code": "UNAVAILABLE", "retrySafe": True, "retryAfter": retry_after},
                }
            ]
        }
    )


class Admission:
    """The process's bounds on work in flight; ``statements`` counts its CQL statements in flight."""

    def __init__(
        self,
        *,
        max_in_flight: int,
        max_statements: int,
        retry_after: int,
        statements: Callable[[], int],
        static_prefix: str = "",
        on_shed: Callable[[str], None] | None = None,
    ) -> None:
        self.max_in_flight = max_in_flight
        self.max_statements = max_statements
        self.retry_after = retry_after
        self.statements = statements
        self.static_prefix = static_prefix
        #: Called with the reason of each refusal (:data:`IN_FLIGHT` or :data:`STATEMENTS`).
        self.on_shed = on_shed
        self._in_flight = 0
        self._body = shed_body(retry_after)

    @property
    def in_flight(self) -> int:
        """Requests admitted and not yet answered."""
        return self._in_flight

    def _exempt(self, request: web.Request) -> bool:
        if request.path in UNSHED_PATHS or request.method == hdrs.METH_OPTIONS:
            return True
        if self.static_prefix and request.path.startswith(self.static_prefix):
            return True
        return request.headers.get(hdrs.UPGRADE, "").lower() == "websocket"

    def refusal(self) -> str | None:
        """Why a request arriving now is refused, or None."""
        if self.max_in_flight and self._in_flight >= self.max_in_flight:
            return IN_FLIGHT
        if self.max_statements and self.statements() >= self.max_statements:
            return STATEMENTS
        return None

    def refused(self, request: web.Request) -> web.Response:
        return web.Response(
            status=503,
            body=self._body,
            content_type=response_media_type(request.headers.get(hdrs.ACCEPT)),
            charset="utf-8",
            headers={hdrs.RETRY_AFTER: str(self.retry_after)},
        )

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self._exempt(request):
            return await handler(request)
        reason = self.refusal()
        if reason is not None:
            if self.on_shed is not None:
                self.on_shed(reason)
            return self.refused(request)
        self._in_flight += 1
        try:
            return await handler(request)
        finally:
            self._in_flight -= 1
