"""The per-request GraphQL context: services, the viewer, fresh DataLoaders.

A new :class:`Context` is made for every HTTP request. Over WebSocket,
Strawberry keeps one context per connection, so subscriptions call
:meth:`Context.fresh` for each event they deliver: loaders never cache across
events, and a profile change is never served stale.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from strawberry.types import Info

from gateway.broker.pubsub import PubSub
from gateway.broker.sessions import LiveSession, SessionLookup
from gateway.db.session import Database, RequestMetrics
from gateway.errors import Unauthenticated
from gateway.graph import validation
from gateway.graph.dataloader import Loader
from gateway.graph.live import LiveHub
from gateway.graph.observability import OperationRecorder
from gateway.ratelimit.limiter import RateLimiter
from gateway.ratelimit.policy import Limit, RateLimits
from gateway.settings import Settings
from gateway.tracing import Tracer, new_request_id
from gateway.tracing import request_id as current_request_id

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)
L = TypeVar("L", bound=Loader[Any, Any])


class StoreClass(Protocol[S_co]):
    """A domain store's class: built once per process from the database and the settings."""

    def __call__(self, db: Database, settings: Settings, /) -> S_co: ...


#: Resolves a bearer token to the login of its session, or None when it is
#: unknown or expired. The users domain provides it.
Authenticator = Callable[[str], Awaitable[str | None]]


class SocketPresence(Protocol):
    """What a WebSocket tells of its signed-in user (the users domain's presence)."""

    def connected(self, login: str) -> None: ...

    def disconnected(self, login: str) -> None: ...


#: The key per-address rate limits count a request under (the HTTP layer provides it).
AddressOf = Callable[[Any], str]


def _no_address(_: Any) -> str:
    return "unknown"


@dataclass
class Services:
    """Process-wide things every request shares."""

    settings: Settings
    db: Database
    pubsub: PubSub
    authenticate: Authenticator
    #: The session of a token with its expiry, for connections that outlive a request.
    session_of: SessionLookup
    #: Where rate-limit state lives; None: in this process.
    limiter: RateLimiter | None = None
    #: Where operations are counted (the process's metrics); None: nowhere.
    metrics: OperationRecorder | None = None
    #: The client address of a request, as per-address limits key it.
    address_of: AddressOf = _no_address
    #: Delivers subscription events (see ``gateway/graph/live.py``); set by the composition root.
    live: LiveHub | None = None
    #: Told of every authenticated socket that opens and closes; None: nobody listens.
    presence: SocketPresence | None = None
    #: Makes the spans of operations; None: tracing is off (``gateway/tracing.py``).
    tracer: Tracer | None = None
    rate_limits: RateLimits = field(init=False)
    _stores: dict[StoreClass[Any], Any] = field(default_factory=dict)
    _provided: dict[type, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rate_limits = RateLimits(self.settings, self.limiter)

    def provide(self, instance: object) -> None:
        """Keep a process-wide instance the composition root built with more than the database
        and the settings (:meth:`provided` answers it)."""
        self._provided[type(instance)] = instance

    def provided(self, cls: type[S]) -> S:
        instance = self._provided.get(cls)
        if not isinstance(instance, cls):
            raise LookupError(f"the composition root provides no {cls.__name__}")
        return instance

    def store(self, cls: StoreClass[S]) -> S:
        """The process's one instance of a domain store (``cls(db, settings)``)."""
        instance: S | None = self._stores.get(cls)
        if instance is None:
            instance = cls(self.db, self.settings)
            self._stores[cls] = instance
        return instance


class Context:
    def __init__(
        self,
        services: Services,
        *,
        request: Any = None,
        response: Any = None,
        token: str | None = None,
        websocket: bool = False,
    ) -> None:
        """``token`` is the request's bearer token: None when it sent none, "" when the one
        it sent is malformed."""
        self.services = services
        self.request = request
        self.response = response
        #: The HTTP request's id (``X-Request-Id``); a WebSocket's operations get their own.
        self.request_id = current_request_id.get() or new_request_id()
        self.metrics = RequestMetrics()
        self.nodes_requested = 0
        self._token = token
        self._viewer: str | None = None
        self._viewer_known = False
        self._loaders: dict[Callable[..., Any], Any] = {}
        self.connection_params: dict[str, Any] | None = None
        #: One context serves every operation of a WebSocket connection.
        self.websocket = websocket
        #: Response keys of the mutation fields sent with their idempotency key.
        self.keyed_fields: set[str] = set()
        #: Told of every session this context starts (``signIn``/``signUp``): a WebSocket
        #: ties such a session to the connection, so its end closes the socket.
        self.session_listener: Callable[[str, LiveSession], None] | None = None

    # -- authentication -----------------------------------------------------

    def set_token(self, token: str | None) -> None:
        """Act as ``token``'s session, looked up when a resolver first needs the viewer."""
        self._token = token
        self._viewer_known = False

    def signed_in_as(self, login: str, token: str) -> None:
        """The rest of this request acts as ``login``, whose session ``token`` is known to live."""
        self._token, self._viewer, self._viewer_known = token, login, True

    def session_started(self, token: str, session: LiveSession) -> None:
        """The user who just signed up or in: the rest of this request acts as them, and
        a WebSocket connection acts as them for as long as the session lives."""
        self.signed_in_as(session.login, token)
        if self.session_listener is not None:
            self.session_listener(token, session)

    def anonymous(self) -> None:
        """The rest of this request acts as nobody, whatever token it was sent with."""
        self._token, self._viewer, self._viewer_known = None, None, True

    @property
    def login(self) -> str | None:
        """The viewer's login if this request has looked it up; never looks it up itself."""
        return self._viewer if self._viewer_known else None

    @property
    def token(self) -> str | None:
        return self._token or None

    async def viewer(self) -> str | None:
        """The signed-in login; None when no token was sent.

        A token that was sent but is unknown, revoked or expired raises
        ``UNAUTHENTICATED``, so a client learns that its session is gone.
        """
        if not self._viewer_known:
            if self._token is None:
                self._viewer = None
            elif self._token == "":
                raise Unauthenticated("Malformed Authorization header; expected 'Bearer <token>'.")
            else:
                self._viewer = await self.services.authenticate(self._token)
                if self._viewer is None:
                    raise Unauthenticated("Invalid or expired token.")
            self._viewer_known = True
        return self._viewer

    async def require_viewer(self) -> str:
        login = await self.viewer()
        if login is None:
            raise Unauthenticated()
        return login

    # -- shared services ----------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.services.settings

    @property
    def db(self) -> Database:
        return self.services.db

    @property
    def pubsub(self) -> PubSub:
        return self.services.pubsub

    @property
    def live(self) -> LiveHub:
        hub = self.services.live
        assert hub is not None, "the composition root makes the live hub"
        return hub

    def store(self, cls: StoreClass[S]) -> S:
        return self.services.store(cls)

    # -- rate limits --------------------------------------------------------

    @property
    def client_address(self) -> str:
        """The client's address as per-address limits key it (see ``gateway/http/client_address.py``)."""
        return self.services.address_of(self.request)

    @property
    def rate_limits(self) -> RateLimits:
        return self.services.rate_limits

    async def rate_limit(self, limit: Limit, key: str | None = None, cost: int = 1) -> None:
        """Take ``cost`` from ``limit``'s bucket of ``key`` (the client address when None),
        or raise RATE_LIMITED."""
        await self.rate_limits.check(limit, self.client_address if key is None else key, cost)

    def loader(self, factory: Callable[[Context], L]) -> L:
        """This request's instance of the DataLoader that ``factory`` builds."""
        instance: L | None = self._loaders.get(factory)
        if instance is None:
            instance = factory(self)
            self._loaders[factory] = instance
        return instance

    def idempotency_key(self, info: Info, value: str | None, field: str = "clientMutationId") -> str | None:
        """The mutation's idempotency key, checked (``BAD_USER_INPUT`` on ``field``), or None.

        A field sent with its key is safe to repeat, so its ``UNAVAILABLE`` says
        ``retrySafe: true``."""
        key = validation.idempotency_key(value, field)
        if key is not None:
            self.keyed_fields.add(str(info.path.key))
        return key

    def fresh(self) -> Context:
        """Forget cached loader results and start counting anew.

        Called for every operation over a WebSocket and for every subscription
        event, so loaders never serve what an earlier event cached."""
        self._loaders = {}
        self.keyed_fields = set()
        self.nodes_requested = 0
        self.metrics = RequestMetrics()
        self.request_id = new_request_id()
        current_request_id.set(self.request_id)
        return self


def context_of(info: Info[Context, Any]) -> Context:
    return info.context
