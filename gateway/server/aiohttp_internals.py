"""Deadlines on reading a request's head, and quiet refusals of malformed requests: the
gateway's one reach into aiohttp's server.

aiohttp reads a request's head with no deadline of its own: a connection that sends half a
head, or nothing, or a head a byte at a time, is held until the keep-alive timer fires (an
hour by default), so a few thousand such clients exhaust a process (slowloris).
:class:`DeadlineRequestHandler` closes such a connection ``GATEWAY_HEADER_TIMEOUT_SECONDS``
after the head began: from the connection, or on a kept-alive connection from the next
head's first byte (an idle kept-alive connection is the keep-alive's business,
``GATEWAY_KEEPALIVE_SECONDS``). When part of a head came, a ``408`` goes out first. The
deadline covers the whole head, not its progress, so trickling bytes does not extend it.
Bodies are the readers' business (``gateway/http/requests.py``, ``gateway/mail/uploads.py``
give every read ``GATEWAY_BODY_TIMEOUT_SECONDS``); their ``408`` closes the connection here
at once, rather than after aiohttp's lingering read of the rest of a stalled body.

:class:`GatewayRunner` is ``web.AppRunner`` serving through that handler: ``gateway serve``
and the tests' servers use it.

Every name of aiohttp this module relies on beyond its documented API (aiohttp 3.14, pinned
in ``pyproject.toml``), listed in :data:`REACHES` and checked by
``tests/unit/test_upstream_fences.py`` with the other fences (and their behaviour by
``tests/unit/test_aiohttp_internals.py``):

- private: ``AppRunner._make_server`` (overridden: the ``Server`` it returns is rebuilt as a
  :class:`DeadlineServer`), ``Server._loop`` and ``Server._kwargs`` (the event loop and the
  handler arguments the rebuilt server hands each connection's handler),
  ``RequestHandler._data_received_cb`` (a WebSocket's heartbeat callback, let go of once the
  connection is lost);
- public but undocumented, overridden or called: ``Server.__call__`` (the protocol factory),
  ``Server.request_factory`` (wrapped: a request is made once its head is parsed),
  ``RequestHandler.connection_made``, ``.data_received``, ``.connection_lost``,
  ``.finish_response``, ``.force_close``, ``.transport``, ``.logger`` and ``.log_exception``
  (overridden: a request aiohttp cannot parse, ``HttpProcessingError``, is logged at DEBUG
  without its traceback, rather than at ERROR with it).

With ``GATEWAY_HEADER_TIMEOUT_SECONDS`` large the handler behaves as aiohttp's own.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from aiohttp.web_server import Server

from gateway.settings import Settings

__all__ = ["PINNED", "REACHES", "DeadlineRequestHandler", "DeadlineServer", "Deadlines", "GatewayRunner"]

#: The distributions and versions :data:`REACHES` was checked against.
PINNED = (("aiohttp", "3.14.5"),)

#: What this module expects of aiohttp beyond its documented API; the expectations are
#: those of ``gateway/db/driver_internals.py``'s ``REACHES``.
REACHES: tuple[tuple[object, str, str], ...] = (
    (web.AppRunner, "_make_server", "(self)"),
    (Server, "__init__", "(self, handler, request_factory, handler_cancellation, loop, kwargs)"),
    # ``Server._loop`` too, but the name is too common to fence (the gateway has its own):
    # ``tests/unit/test_aiohttp_internals.py`` checks it.
    (Server, "_kwargs", "instance attribute"),
    (Server, "request_factory", "instance attribute"),
    (Server, "__call__", "(self)"),
    (RequestHandler, "connection_made", "(self, transport)"),
    (RequestHandler, "data_received", "(self, data)"),
    (RequestHandler, "connection_lost", "(self, exc)"),
    (RequestHandler, "finish_response", "(self, request, resp, start_time)"),
    (RequestHandler, "force_close", "(self)"),
    (RequestHandler, "log_exception", "(self, args, kw)"),
    (RequestHandler, "_data_received_cb", "instance attribute"),
)

log = logging.getLogger(__name__)

#: What a client whose head ran out of time is told before its connection closes.
REQUEST_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


@dataclass(frozen=True)
class Deadlines:
    #: Seconds from a head's start (the connection, or its first byte) to its end.
    head: float

    @classmethod
    def of(cls, settings: Settings) -> Deadlines:
        return cls(head=settings.header_timeout_seconds)


class DeadlineRequestHandler(RequestHandler):
    """aiohttp's connection handler, with a deadline on each request's head."""

    def __init__(self, manager: Server, *, deadlines: Deadlines, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._deadlines = deadlines
        self._head_timer: asyncio.TimerHandle | None = None
        #: A request is being handled (its head was parsed; for a WebSocket, its whole life).
        self._in_request = False
        #: The body of the last request: bytes that arrive while it is unfinished are its own
        #: (read by its handler, or by aiohttp's lingering after the response), no head's.
        self._body: StreamReader | None = None
        #: Bytes of the coming head have arrived.
        self._head_started = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        body = self._body is not None and not self._body.is_eof()
        if data and not self._in_request and not body:
            self._head_started = True
            if self._head_timer is None:
                self._arm()
        super().data_received(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        # The body's reader points back at this handler, and so does a WebSocket's heartbeat
        # (aiohttp keeps its callback for the data received, the socket holds the request
        # and the request this handler): let them go with the connection rather than wait
        # for the cycle collector.
        self._body = None
        super().connection_lost(exc)
        self._data_received_cb = None

    def head_received(self, body: StreamReader) -> None:
        """The head was parsed: its request, whose body is ``body``, is being handled."""
        self._disarm()
        self._in_request = True
        self._body = body
        self._head_started = False

    async def finish_response(
        self, request: BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        answered = await super().finish_response(request, resp, start_time)
        self._in_request = False
        if resp.status == 408:
            # A body that stalled: nothing more is read from this client.
            self.force_close()
        return answered

    def log_exception(self, *args: Any, **kwargs: Any) -> None:
        """aiohttp logs every request it cannot parse (a bad request line, a header with a
        control character, a duplicate ``Host``...) at ERROR with its traceback, before it
        answers 400: anyone could fill the log with tracebacks at the cost of a few bytes
        each, and real errors would drown. Such a request is the client's error, answered as
        such, so it is logged at DEBUG, without a traceback; anything else as aiohttp does."""
        error = kwargs.get("exc_info")
        if isinstance(error, web.RequestPayloadError) and isinstance(error.__cause__, HttpProcessingError):
            error = error.__cause__
        if isinstance(error, HttpProcessingError):
            detail = (error.message or type(error).__name__).strip().splitlines()[0][:200]
            self.logger.debug("malformed request answered %s: %s", error.code, detail)
            return
        super().log_exception(*args, **kwargs)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = asyncio.get_running_loop().call_later(self._deadlines.head, self._head_expired)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_expired(self) -> None:
        self._head_timer = None
        if self._in_request or self.transport is None:
            return
        if self._head_started:
            self.transport.write(REQUEST_TIMEOUT)
        log.debug("closed a connection: no request head within %gs", self._deadlines.head)
        self.force_close()


class DeadlineServer(Server):
    """aiohttp's ``Server`` handing each connection a :class:`DeadlineRequestHandler`."""

    def __init__(self, *args: Any, deadlines: Deadlines, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadlines = deadlines
        make_request = self.request_factory

        def request_factory(
            message: RawRequestMessage,
            payload: StreamReader,
            protocol: RequestHandler,
            writer: AbstractStreamWriter,
            task: asyncio.Task[None],
        ) -> BaseRequest:
            if isinstance(protocol, DeadlineRequestHandler):
                protocol.head_received(payload)
            return make_request(message, payload, protocol, writer, task)

        self.request_factory = request_factory

    @classmethod
    def rebuilt(cls, server: Server, deadlines: Deadlines) -> DeadlineServer:
        """``server`` as a :class:`DeadlineServer`, with the same handler and arguments."""
        return cls(
            server.request_handler,
            request_factory=server.request_factory,
            handler_cancellation=server.handler_cancellation,
            loop=server._loop,
            deadlines=deadlines,
            **server._kwargs,
        )

    def __call__(self) -> RequestHandler:
        return DeadlineRequestHandler(self, loop=self._loop, deadlines=self.deadlines, **self._kwargs)


class GatewayRunner(web.AppRunner):
    """``web.AppRunner`` whose connections have :class:`Deadlines`."""

    def __init__(self, app: web.Application, *, deadlines: Deadlines, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.deadlines = deadlines

    async def _make_server(self) -> Server:
        return DeadlineServer.rebuilt(await super()._make_server(), self.deadlines)
