"""WebSocket connections that live exactly as long as their session, within their caps.

Strawberry's protocol handlers, with what the contract adds on top:

- a socket becomes authenticated in one of three ways, and each ties it to a
  session alike (:meth:`SessionSocket.bind`): the ``connection_init`` payload's
  token, else the upgrade request's ``Authorization`` header, or later a
  ``signIn``/``signUp`` sent over the socket;
- a token at ``connection_init`` (payload or header) that is malformed, unknown,
  revoked or expired is closed with 4403; without one the connection is anonymous;
- every operation re-reads the session (one CQL statement, as an HTTP request
  costs) and the socket is closed with 4403 once it is gone;
- ``signOut`` anywhere announces the revocation (:mod:`gateway.broker.sessions`), and
  the session's expiry is scheduled: the process's :class:`SessionWatch` hears of
  either and the socket's running operations end and it is closed with 4403;
- at most ``GATEWAY_MAX_SOCKETS`` sockets per process, ``GATEWAY_MAX_SOCKETS_PER_ADDRESS``
  per client address (as rate limits key it) and ``GATEWAY_MAX_SOCKETS_PER_USER`` per
  signed-in user, however it signed in: over any, 4429;
- at most ``GATEWAY_MAX_SUBSCRIPTIONS_PER_SOCKET`` operations running on one socket and
  ``GATEWAY_MAX_SUBSCRIPTIONS_PER_USER`` for one user over all the process's sockets: one
  more is refused with ``QUERY_TOO_COMPLEX`` (``extensions.limit``), the socket stays open;
- a socket with no operation running and no message from its client for
  ``GATEWAY_WS_IDLE_SECONDS`` is closed with 4410, signed in or not;
- both protocols get the ``connection_init`` timeout (4408), kept by a timer rather than
  a task of its own;
- a subscription the live hub delivers is *parked* once it is live
  (``gateway/graph/live.py``): its operation's task ends, and the socket keeps a small
  record of it, which answers the client's ``complete``/``stop`` and writes the
  subscription's last frames when the hub ends it;
- a message to a client that has gone is dropped: the socket is closing anyway, so
  nothing logs it as a failure.

Everything the handlers override of Strawberry's is listed in the fence
(``gateway/graph/executor_internals.py``, row 9), which ``tests/unit/test_upstream_fences.py``
holds to the installed version.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler

from gateway.broker.sessions import LiveSession
from gateway.db.session import CassandraUnavailable
from gateway.graph.context import Context, Services
from gateway.graph.limits import too_complex
from gateway.graph.live import CURRENT_OPERATION, Follow, LiveOperation, ending_payload
from gateway.http.auth import bearer_token
from gateway.http.live import SocketSink
from gateway.http.session_watch import SessionWatch, Watched
from gateway.http.sockets import TOO_MANY_CODE, TOO_MANY_REASON, SocketCounts

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
#: No operation running and no message for ``GATEWAY_WS_IDLE_SECONDS``.
IDLE_CODE = 4410
IDLE_REASON = "Idle: no operation and no message for too long"


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
    """One connection's admission, session, operations and idleness, shared by both
    protocol handlers."""

    __slots__ = (
        "_closing", "_handler", "_idle", "_last", "_loop", "_pending_close", "_watched", "address", "closed",
        "counts", "idle_seconds", "login", "parked", "running", "services", "token", "watch", "websocket",
    )  # fmt: skip

    @classmethod
    def of(cls, view: object, websocket: AsyncWebSocketAdapter) -> SessionSocket:
        if not isinstance(view, SocketView):
            raise TypeError(f"{type(view).__name__} keeps no services and socket counts")
        return cls(view.services, view.sockets, websocket)

    def __init__(self, services: Services, counts: SocketCounts, websocket: AsyncWebSocketAdapter) -> None:
        self.services = services
        self.counts = counts
        self.websocket = websocket
        self.watch = services.provided(SessionWatch)
        self.token: str | None = None
        self.login: str | None = None
        self.address: str | None = None
        self._watched: Watched | None = None
        self._handler: asyncio.Task[None] | None = None
        self._pending_close: tuple[int, str] | None = None
        self._closing: asyncio.Task[None] | None = None
        self.closed = False
        self._loop = asyncio.get_running_loop()
        self.idle_seconds = services.settings.ws_idle_seconds
        self._last = self._loop.time()
        self._idle: asyncio.TimerHandle | None = None
        #: Operations running: their tasks, and the subscriptions parked with the hub.
        self.running = 0
        self.parked: dict[str, Follow] = {}

    # -- operations ---------------------------------------------------------------------

    def operation(
        self,
        protocol: str,
        operation_id: str,
        active: Callable[[], bool],
        query: str,
        variables: Any,
        name: Any,
    ) -> contextlib.AbstractContextManager[None]:
        """While an operation runs, the live hub knows where its results go, and may park it."""
        sink = self.sink(protocol, operation_id, active)
        if sink is None:
            return contextlib.nullcontext()
        return _current(LiveOperation(query, variables, name, sink, park=partial(self._park, operation_id)))

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

    def refusal(self) -> dict[str, Any] | None:
        """The error that refuses one more operation over a cap, formatted; None: it may run."""
        refused = self.counts.operation_refused(self.running, self.login)
        if refused is None:
            return None
        message, limit = refused
        return dict(too_complex(message, limit=limit).formatted)

    def track(self, task: asyncio.Task[Any] | None) -> None:
        """Count the operation ``task`` runs until it ends."""
        if task is None:
            return
        login = self.login
        self._started(login)
        self.counts.operation_tasks += 1
        task.add_done_callback(lambda _: self._task_ended(login))

    def _task_ended(self, login: str | None) -> None:
        self.counts.operation_tasks -= 1
        self._ended(login)

    def _started(self, login: str | None) -> None:
        self.running += 1
        self.counts.operation_started(login)

    def _ended(self, login: str | None) -> None:
        self.running -= 1
        self.counts.operation_ended(login)
        self.heard()
        if not self.running:
            self._arm_idle()

    def _park(self, operation_id: str, follow: Follow) -> None:
        """The hub follows on for this operation: its task may end; the subscription runs
        (and counts as running) until the follow ends."""
        operation = follow.operation
        assert operation is not None
        sink = operation.sink
        if isinstance(sink, SocketSink):
            sink.parked()
        login = self.login
        self._started(login)
        self.counts.parked += 1
        self.parked[operation_id] = follow
        follow.ended.add_done_callback(partial(self._parked_ended, operation_id, follow, login))

    def _parked_ended(
        self,
        operation_id: str,
        follow: Follow,
        login: str | None,
        ended: asyncio.Future[BaseException | None],
    ) -> None:
        """A parked subscription ended. Ended by the hub (a verdict, the broker, a recheck,
        its socket falling behind), its client is told as the protocol says: the error that
        ended it, if any, then ``complete``; ended by its client or its socket, nothing."""
        if self.parked.get(operation_id) is follow:
            del self.parked[operation_id]
            operation = follow.operation
            sink = operation.sink if operation is not None else None
            if isinstance(sink, SocketSink) and not self.closed:
                error = None if ended.cancelled() else ended.result()
                if error is not None:
                    sink.deliver(ending_payload(error))
                sink.complete()
        self.counts.parked -= 1
        self._ended(login)

    def unpark(self, operation_id: str, *, tell: bool = False) -> bool:
        """End a parked subscription for its client, who completed or stopped it, or sent
        another under its id (``tell``: answer with ``complete``, as legacy ``graphql-ws``
        does); False when none is parked under the id."""
        follow = self.parked.pop(operation_id, None)
        if follow is None:
            return False
        follow.end()
        operation = follow.operation
        if tell and operation is not None and isinstance(operation.sink, SocketSink):
            operation.sink.complete()
        return True

    # -- idleness -------------------------------------------------------------------------

    def heard(self) -> None:
        """The client sent a message (or an operation ended): the socket is not idle."""
        self._last = self._loop.time()

    def _arm_idle(self) -> None:
        if self._idle is None and not self.closed:
            self._idle = self._loop.call_at(self._last + self.idle_seconds, self._idle_due)

    def _idle_due(self) -> None:
        self._idle = None
        if self.closed or self.running:
            return  # armed again when the last operation ends
        due = self._last + self.idle_seconds
        if self._loop.time() < due:
            self._idle = self._loop.call_at(due, self._idle_due)
            return
        log.info("closing an idle WebSocket of %s", self.login or "an anonymous client")
        self.close_soon(IDLE_CODE, IDLE_REASON)

    # -- closing --------------------------------------------------------------------------

    def _cut_off(self, code: int, reason: str) -> None:
        log.info("cutting off a WebSocket of %s: %s", self.login or "an anonymous client", reason)
        self.close_soon(code, reason)

    def close_soon(self, code: int, reason: str) -> None:
        """:meth:`close`, from a callback."""
        if not self.closed:
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
        """Run the protocol handler while the process, and the client's address, have room
        for one more socket."""
        address = self.services.address_of(getattr(self.websocket, "request", None))
        if not self.counts.open(address):
            await self.close(TOO_MANY_CODE, TOO_MANY_REASON)
            return
        self.address = address
        self._handler = asyncio.create_task(handle())
        self._arm_idle()
        try:
            await self._handler
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._pending_close is None or (current is not None and current.cancelling()):
                raise
        finally:
            self.closed = True
            self.counts.close(address)
            self._release()
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
            for operation_id in list(self.parked):
                self.unpark(operation_id)
        if self._pending_close is not None:
            code, reason = self._pending_close
            with contextlib.suppress(Exception):
                await self.websocket.close(code=code, reason=reason)

    # -- the session ----------------------------------------------------------------------

    async def admit(self, payload: object, context: Context) -> tuple[int, str] | None:
        """Check ``connection_init``'s token (the payload's, else the upgrade request's
        ``Authorization`` header): None to go on, else the close code and reason."""
        context.session_listener = self._started_session
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
        self._watched = self.watch.watch(token, session.expires_at, self._session_ended)
        if self.services.presence is not None:
            self.services.presence.connected(session.login)
        return None

    def _release(self) -> None:
        if self.login is not None:
            self.counts.sign_out(self.login)
            if self.services.presence is not None:
                self.services.presence.disconnected(self.login)
        if self._watched is not None:
            self.watch.unwatch(self._watched)
        self.token = self.login = self._watched = None

    def _session_ended(self) -> None:
        self._watched = None
        log.info("closing a WebSocket of %s: its session ended", self.login)
        self.close_soon(FORBIDDEN_CODE, SESSION_ENDED)

    def _started_session(self, token: str, session: LiveSession) -> None:
        """A ``signIn`` or ``signUp`` over this socket: the socket acts as that session."""
        refusal = self.bind(token, session)
        if refusal is not None:
            self.close_soon(*refusal)

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


@contextlib.contextmanager
def _current(operation: LiveOperation) -> Iterator[None]:
    token = CURRENT_OPERATION.set(operation)
    try:
        yield
    finally:
        CURRENT_OPERATION.reset(token)


class TransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """``graphql-transport-ws`` with the rules of :class:`SessionSocket`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.session = SessionSocket.of(self.view, self.websocket)
        # The socket's own caps replace Strawberry's uncoded one (SessionSocket.refusal).
        self.max_subscriptions_per_connection = None
        self.init_timer: asyncio.TimerHandle | None = None

    async def handle(self) -> None:
        try:
            await self.session.run(super().handle)
        finally:
            if self.init_timer is not None:
                self.init_timer.cancel()

    def on_request_accepted(self) -> None:
        """The ``connection_init`` deadline, as a timer (Strawberry keeps a task for it)."""
        seconds = self.connection_init_wait_timeout.total_seconds()
        self.init_timer = asyncio.get_running_loop().call_later(seconds, self._init_timed_out)

    def _init_timed_out(self) -> None:
        self.init_timer = None
        if not self.connection_init_received:
            self.connection_timed_out = True
            self.session.close_soon(INIT_TIMEOUT_CODE, INIT_TIMEOUT_REASON)

    async def handle_message(self, message: Any) -> None:
        self.session.heard()
        await super().handle_message(message)

    async def handle_connection_init(self, message: Any) -> None:
        if not self.connection_init_received and not self.connection_timed_out:
            if self.init_timer is not None:
                self.init_timer.cancel()
                self.init_timer = None
            refusal = await self.session.admit(message.get("payload"), self.context)
            if refusal is not None:
                await self.session.close(*refusal)
                return
        await super().handle_connection_init(message)

    async def handle_subscribe(self, message: Any) -> None:
        operation_id = message["id"]
        if self.connection_acknowledged and operation_id in self.session.parked:
            await self.websocket.close(code=4409, reason=f"Subscriber for {operation_id} already exists")
            return
        if self.connection_acknowledged and operation_id not in self.operations:
            refusal = self.session.refusal()
            if refusal is not None:
                await self.send_message({"id": operation_id, "type": "error", "payload": [refusal]})
                return
            await super().handle_subscribe(message)
            operation = self.operations.get(operation_id)
            self.session.track(operation.task if operation is not None else None)
            return
        await super().handle_subscribe(message)

    async def cleanup_operation(self, operation_id: str) -> None:
        if not self.session.unpark(operation_id):
            await super().cleanup_operation(operation_id)

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

    async def send_message(self, message: Any) -> None:
        if message.get("type") == "complete" and message.get("id") in self.session.parked:
            return  # the subscription goes on, parked: its complete comes when it ends
        with contextlib.suppress(WebSocketDisconnected):  # the client left: nobody to tell
            await super().send_message(message)


class LegacyWSHandler(BaseGraphQLWSHandler[Context, None]):
    """Legacy ``graphql-ws`` with the rules of :class:`SessionSocket`, and a
    ``connection_init`` timeout like ``graphql-transport-ws``'s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.session = SessionSocket.of(self.view, self.websocket)
        self.max_subscriptions_per_connection = None
        self.init_received = False
        self.init_timer: asyncio.TimerHandle | None = None

    async def handle(self) -> None:
        seconds = self.view.connection_init_wait_timeout.total_seconds()
        self.init_timer = asyncio.get_running_loop().call_later(seconds, self._init_timed_out)
        try:
            await self.session.run(super().handle)
        finally:
            if self.init_timer is not None:
                self.init_timer.cancel()

    def _init_timed_out(self) -> None:
        self.init_timer = None
        if not self.init_received:
            self.session.close_soon(INIT_TIMEOUT_CODE, INIT_TIMEOUT_REASON)

    async def handle_message(self, message: Any) -> None:
        self.session.heard()
        await super().handle_message(message)

    async def handle_connection_init(self, message: Any) -> None:
        if not self.init_received:
            self.init_received = True
            if self.init_timer is not None:
                self.init_timer.cancel()
                self.init_timer = None
            refusal = await self.session.admit(message.get("payload"), self.context)
            if refusal is not None:
                with contextlib.suppress(Exception):
                    await self.send_message({"type": "connection_error", "payload": {"message": refusal[1]}})
                await self.session.close(*refusal)
                return
        await super().handle_connection_init(message)

    async def handle_start(self, message: Any) -> None:
        operation_id = message["id"]
        if not self.connection_acknowledged:
            await super().handle_start(message)
            return
        # Another operation under a running one's id replaces it, parked or not.
        self.session.unpark(operation_id, tell=True)
        if operation_id in self.tasks:
            await self.cleanup_operation(operation_id)
        refusal = self.session.refusal()
        if refusal is not None:
            await self.send_message({"type": "error", "id": operation_id, "payload": refusal})
            return
        await super().handle_start(message)
        self.session.track(self.tasks.get(operation_id))

    async def cleanup_operation(self, operation_id: str) -> None:
        if not self.session.unpark(operation_id, tell=True):
            await super().cleanup_operation(operation_id)

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

    async def send_message(self, message: Any) -> None:
        if message.get("type") == "complete" and message.get("id") in self.session.parked:
            return  # the subscription goes on, parked: its complete comes when it ends
        with contextlib.suppress(WebSocketDisconnected):  # the client left: nobody to tell
            await super().send_message(message)
