"""WebSocket connections that live exactly as long as their session.

Strawberry's protocol handlers, with what the contract adds on top:

- a socket becomes authenticated in one of three ways, and each ties it to a
  session alike (:meth:`SessionSocket.bind`): the ``connection_init`` payload's
  token, else the upgrade request's ``Authorization`` header, or later a
  ``signIn``/``signUp`` sent over the socket;
- a token at ``connection_init`` (payload or header) that is malformed, unknown,
  revoked or expired is closed with 4403; without one the connection is anonymous;
- every operation re-reads the session (one CQL statement, as an HTTP request
  costs) and the socket is closed with 4403 once it is gone;
- ``signOut`` anywhere announces the revocation on the session's channel
  (:mod:`gateway.broker.sessions`) and the session's expiry is scheduled: either
  ends the running operations and closes the socket with 4403;
- at most ``GATEWAY_MAX_SOCKETS`` sockets per process and
  ``GATEWAY_MAX_SOCKETS_PER_USER`` per signed-in user, however it signed in: over
  either, 4429;
- the legacy ``graphql-ws`` protocol gets the ``connection_init`` timeout
  (4408) that ``graphql-transport-ws`` has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler

from gateway.broker.pubsub import BrokerUnavailable
from gateway.broker.sessions import LiveSession, session_channel
from gateway.db.session import CassandraUnavailable
from gateway.graph.context import Context, Services
from gateway.graph.live import CURRENT_OPERATION, LiveOperation
from gateway.http.auth import bearer_token
from gateway.http.live import SocketSink
from gateway.http.sockets import TOO_MANY_CODE, TOO_MANY_REASON, SocketCounts
from gateway.tasks import cancel_and_wait

if TYPE_CHECKING:
    from strawberry.http.async_base_view import AsyncWebSocketAdapter

log = logging.getLogger(__name__)

TRANSPORT_PROTOCOL = "graphql-transport-ws"
LEGACY_PROTOCOL = "graphql-ws"
FORBIDDEN_CODE = 4403
INVALID_TOKEN = "Forbidden: invalid or expired token"
SESSION_ENDED = "Forbidden: the session has ended"
#: Cassandra could not be asked about the token; the client may retry (not a 44xx code).
UNAVAILABLE_CODE = 1011
UNAVAILABLE_REASON = "Cassandra is unavailable right now; retrying later is safe."
INIT_TIMEOUT_CODE = 4408
INIT_TIMEOUT_REASON = "Connection initialisation timeout"
#: Pause before listening again on a session channel that dropped the socket.
RESUBSCRIBE_SECONDS = 1.0
#: While the broker is unreachable revocations cannot arrive: each socket looks its
#: session up this often instead (one CQL statement per socket per interval).
BROKER_POLL_SECONDS = 5.0


def token_of(payload: object) -> str | None:
    """The bearer token of a ``connection_init`` payload; "" for a malformed one."""
    if not isinstance(payload, dict):
        return None
    value = payload.get("authorization") or payload.get("Authorization")
    return bearer_token(value if isinstance(value, str) else None)


@runtime_checkable
class SocketView(Protocol):
    """What the protocol handlers need of the view that made them."""

    services: Services
    sockets: SocketCounts


class SessionSocket:
    """One connection's admission and session, shared by both protocol handlers."""

    @classmethod
    def of(cls, view: object, websocket: AsyncWebSocketAdapter) -> SessionSocket:
        if not isinstance(view, SocketView):
            raise TypeError(f"{type(view).__name__} keeps no services and socket counts")
        return cls(view.services, view.sockets, websocket)

    def __init__(self, services: Services, counts: SocketCounts, websocket: AsyncWebSocketAdapter) -> None:
        self.services = services
        self.counts = counts
        self.websocket = websocket
        self.token: str | None = None
        self.login: str | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._handler: asyncio.Task[None] | None = None
        self._pending_close: tuple[int, str] | None = None
        self._closing: asyncio.Task[None] | None = None
        self.closed = False

    def operation(
        self,
        protocol: str,
        operation_id: str,
        active: Callable[[], bool],
        query: str,
        variables: Any,
        name: Any,
    ) -> contextlib.AbstractContextManager[None]:
        """While an operation runs, the live hub knows where its results go."""
        sink = self.sink(protocol, operation_id, active)
        if sink is None:
            return contextlib.nullcontext()
        return _current(LiveOperation(query, variables, name, sink))

    def sink(self, protocol: str, operation_id: str, active: Callable[[], bool]) -> SocketSink | None:
        """Where the live hub writes an operation's results: this socket's transport, cut off
        (and closed with 1013) once more than ``GATEWAY_WS_SEND_BUFFER_BYTES`` wait in it;
        None when the socket has no transport left (it is closing)."""
        request = getattr(self.websocket, "request", None)  # aiohttp's adapter keeps the request
        transport = request.transport if request is not None else None
        if transport is None:
            return None
        return SocketSink(
            transport,
            protocol,
            operation_id,
            limit=self.services.settings.ws_send_buffer_bytes,
            cut=self._cut_off,
            active=active,
        )

    def _cut_off(self, code: int, reason: str) -> None:
        log.info("cutting off a WebSocket of %s: %s", self.login or "an anonymous client", reason)
        self._closing = asyncio.create_task(self.close(code, reason))

    async def close(self, code: int, reason: str) -> None:
        """Close the socket with ``code``, from any task.

        aiohttp closed from a task other than the one reading the socket sends
        the close frame and drops the connection without the closing handshake
        (many clients then report 1006). So another task stops the reading
        task, and :meth:`run` closes the socket once nothing reads it."""
        if self.closed:
            return
        self.closed = True
        handler = self._handler
        if handler is None or handler.done() or handler is asyncio.current_task():
            with contextlib.suppress(Exception):
                await self.websocket.close(code=code, reason=reason)
            return
        self._pending_close = (code, reason)
        handler.cancel()

    async def run(self, handle: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run the protocol handler while the process has room for one more socket."""
        if not self.counts.open():
            await self.close(TOO_MANY_CODE, TOO_MANY_REASON)
            return
        self._handler = asyncio.create_task(handle())
        try:
            await self._handler
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._pending_close is None or (current is not None and current.cancelling()):
                raise
        finally:
            self.counts.close()
            watcher = self._watcher
            self._release()
            await cancel_and_wait(watcher, what="a WebSocket's session watch")
        if self._pending_close is not None:
            code, reason = self._pending_close
            with contextlib.suppress(Exception):
                await self.websocket.close(code=code, reason=reason)

    async def admit(self, payload: object, context: Context) -> tuple[int, str] | None:
        """Check ``connection_init``'s token (the payload's, else the upgrade request's
        ``Authorization`` header): None to go on, else the close code and reason."""
        context.session_listener = self._started
        token = token_of(payload)
        if token is None:
            headers = getattr(context.request, "headers", None)
            token = bearer_token(headers.get("Authorization") if headers is not None else None)
        if token is None:
            return None
        if token == "":
            return FORBIDDEN_CODE, INVALID_TOKEN
        try:
            session = await self.services.session_of(token)
        except CassandraUnavailable:
            return UNAVAILABLE_CODE, UNAVAILABLE_REASON
        if session is None:
            return FORBIDDEN_CODE, INVALID_TOKEN
        refusal = self.bind(token, session)
        if refusal is None:
            context.signed_in_as(session.login, token)
        return refusal

    def bind(self, token: str, session: LiveSession) -> tuple[int, str] | None:
        """Make ``session`` the connection's: counted against its user's socket cap, and
        watched, so its revocation or expiry closes the socket. A session bound before
        (a ``signIn`` over a signed-in socket) is let go. None, or the refusal when the
        user holds all the sockets they may."""
        self._release()
        if not self.counts.sign_in(session.login):
            return TOO_MANY_CODE, TOO_MANY_REASON
        self.token, self.login = token, session.login
        self._watcher = asyncio.create_task(self._watch(token, session.expires_at))
        if self.services.presence is not None:
            self.services.presence.connected(session.login)
        return None

    def _release(self) -> None:
        if self.login is not None:
            self.counts.sign_out(self.login)
            if self.services.presence is not None:
                self.services.presence.disconnected(self.login)
        if self._watcher is not None:
            self._watcher.cancel()
        self.token = self.login = self._watcher = None

    def _started(self, token: str, session: LiveSession) -> None:
        """A ``signIn`` or ``signUp`` over this socket: the socket acts as that session."""
        refusal = self.bind(token, session)
        if refusal is not None:
            self._closing = asyncio.create_task(self.close(*refusal))

    async def lives(self, context: Context) -> bool:
        """Before each operation: whether the session still lives (closing the socket if not).

        An anonymous socket's operations act as nobody, whatever an earlier operation
        left in the context. When Cassandra cannot say, the operation runs and the
        context asks again when a resolver needs the viewer, so the client gets
        ``UNAVAILABLE`` exactly as over HTTP.
        """
        if self.closed:
            return False
        if self.token is None:
            context.anonymous()
            return True
        try:
            session = await self.services.session_of(self.token)
        except CassandraUnavailable:
            context.set_token(self.token)
            return True
        if session is None:
            await self.close(FORBIDDEN_CODE, SESSION_ENDED)
            return False
        context.signed_in_as(session.login, self.token)
        return True

    async def _watch(self, token: str, expires_at: datetime) -> None:
        """Close the socket when the session is revoked (from any process) or expires."""
        while True:
            if await self._ended(token, expires_at):
                break
            await asyncio.sleep(RESUBSCRIBE_SECONDS)
        log.info("closing a WebSocket of %s: its session ended", self.login)
        await self.close(FORBIDDEN_CODE, SESSION_ENDED)

    async def _ended(self, token: str, expires_at: datetime) -> bool:
        """Wait for the session's revocation or expiry (True), or for the channel to
        drop this subscriber (a slow reader, a broker reconnect): then a revocation
        may have been missed, and the session is looked up. With the broker lost,
        the session is looked up every :data:`BROKER_POLL_SECONDS` until it is back."""
        remaining = (expires_at - datetime.now(UTC)).total_seconds()
        if remaining <= 0:
            return True
        try:
            async with self.services.pubsub.subscribe(session_channel(token)) as messages:
                try:
                    async with asyncio.timeout(remaining):
                        async for _ in messages:
                            return True
                except TimeoutError:
                    return True
        except BrokerUnavailable:
            await asyncio.sleep(min(remaining, BROKER_POLL_SECONDS))
        try:
            return await self.services.session_of(token) is None
        except CassandraUnavailable:
            return False


@contextlib.contextmanager
def _current(operation: LiveOperation) -> Iterator[None]:
    token = CURRENT_OPERATION.set(operation)
    try:
        yield
    finally:
        CURRENT_OPERATION.reset(token)


class TransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """``graphql-transport-ws`` with the session rules of :class:`SessionSocket`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.session = SessionSocket.of(self.view, self.websocket)

    async def handle(self) -> None:
        await self.session.run(super().handle)

    async def handle_connection_init(self, message: Any) -> None:
        if not self.connection_init_received and not self.connection_timed_out:
            if self.connection_init_timeout_task:
                self.connection_init_timeout_task.cancel()
            refusal = await self.session.admit(message.get("payload"), self.context)
            if refusal is not None:
                await self.session.close(*refusal)
                return
        await super().handle_connection_init(message)

    async def handle_connection_init_timeout(self) -> None:
        await asyncio.sleep(self.connection_init_wait_timeout.total_seconds())
        if not self.connection_init_received:
            self.connection_timed_out = True
            await self.session.close(INIT_TIMEOUT_CODE, INIT_TIMEOUT_REASON)

    async def run_operation(self, operation: Operation[Context, None]) -> None:
        if not await self.session.lives(self.context):
            return
        with self.session.operation(
            TRANSPORT_PROTOCOL,
            operation.id,
            lambda: not operation.completed,
            operation.query,
            operation.variables,
            operation.operation_name,
        ):
            await super().run_operation(operation)


class LegacyWSHandler(BaseGraphQLWSHandler[Context, None]):
    """Legacy ``graphql-ws`` with the session rules of :class:`SessionSocket`, and a
    ``connection_init`` timeout like ``graphql-transport-ws``'s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.session = SessionSocket.of(self.view, self.websocket)
        self.init_received = False

    async def handle(self) -> None:
        timeout = asyncio.create_task(self._init_timeout())
        try:
            await self.session.run(super().handle)
        finally:
            timeout.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timeout

    async def _init_timeout(self) -> None:
        await asyncio.sleep(self.view.connection_init_wait_timeout.total_seconds())
        if not self.init_received:
            await self.session.close(INIT_TIMEOUT_CODE, INIT_TIMEOUT_REASON)

    async def handle_connection_init(self, message: Any) -> None:
        if not self.init_received:
            self.init_received = True
            refusal = await self.session.admit(message.get("payload"), self.context)
            if refusal is not None:
                with contextlib.suppress(Exception):
                    await self.send_message({"type": "connection_error", "payload": {"message": refusal[1]}})
                await self.session.close(*refusal)
                return
        await super().handle_connection_init(message)

    async def handle_async_results(
        self, operation_id: str, query: str, operation_name: str | None, variables: dict[str, object] | None
    ) -> None:
        if not await self.session.lives(self.context):
            self.tasks.pop(operation_id, None)
            return
        with self.session.operation(
            LEGACY_PROTOCOL,
            operation_id,
            lambda: operation_id in self.tasks,
            query,
            variables,
            operation_name,
        ):
            await super().handle_async_results(operation_id, query, operation_name, variables)
