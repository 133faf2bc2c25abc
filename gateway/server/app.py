"""The aiohttp application: /graphql, /healthz, /readyz, /metrics and the domains' routes."""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import timedelta
from typing import Any

import strawberry
from aiohttp import web
from cross_web import AiohttpHTTPRequestAdapter
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL

from gateway.broker.memory import InProcessPubSub, MemoryPresenceBoard
from gateway.broker.pubsub import PubSub
from gateway.broker.redis_presence import RedisPresenceBoard
from gateway.broker.redis_pubsub import RedisPubSub
from gateway.composition import Composition, compose
from gateway.db.migrations import migrate
from gateway.db.session import CassandraUnavailable, Database
from gateway.errors import RateLimited
from gateway.graph.context import Context, Services
from gateway.graph.executor_internals import graphql_schema
from gateway.graph.limits import QueryLimits
from gateway.http.auth import bearer_token
from gateway.http.batch import BatchBudget
from gateway.http.compression import compress_responses
from gateway.http.cors import install_cors
from gateway.http.request_context import install as install_request_context
from gateway.http.requests import ENDPOINT, Endpoint
from gateway.http.sockets import SocketCaps, SocketCounts
from gateway.http.view import GraphQLOverHTTPView
from gateway.http.websocket import LegacyWSHandler, TransportWSHandler
from gateway.ratelimit.policy import Limit
from gateway.server.admission import Admission
from gateway.server.drain import Drain
from gateway.server.graphiql import STATIC_PREFIX, add_static_routes, render_graphiql
from gateway.server.metrics import UPGRADED, Exposure, GatewayMetrics
from gateway.server.metrics import install as install_metrics
from gateway.settings import Settings
from gateway.tasks import cancel_and_wait
from gateway.tracing import tracer_of
from gateway.tracing import tracer_provider as make_tracer_provider

log = logging.getLogger(__name__)

SERVICES = web.AppKey("services", Services)
READY = web.AppKey("ready", asyncio.Event)
CONNECTOR = web.AppKey("connector", asyncio.Task)
DRAIN = web.AppKey("drain", Drain)
ADMISSION = web.AppKey("admission", Admission)
SOCKETS = web.AppKey("sockets", SocketCounts)
COMPOSITION = web.AppKey("composition", Composition)
WORKER_TASKS = web.AppKey("worker_tasks", list[asyncio.Task[None]])
#: The ``TracerProvider`` the ``OTEL_*`` settings made, shut down (its spans sent) at cleanup.
OWN_TRACER_PROVIDER = web.AppKey("own_tracer_provider", TracerProvider)

#: Seconds between attempts to reach Cassandra while it is down at start-up.
CONNECT_RETRY_SECONDS = 2.0


class GatewayGraphQLView(BatchBudget, GraphQLOverHTTPView[Context, None]):
    """The ``/graphql`` view over the services ``create_app`` built, reading requests
    through ``request_adapter`` (the mail domain's streams uploads into Cassandra)."""

    graphql_transport_ws_handler_class = TransportWSHandler
    graphql_ws_handler_class = LegacyWSHandler

    def __init__(
        self,
        services: Services,
        *,
        drain: Drain,
        request_adapter: type[AiohttpHTTPRequestAdapter] = AiohttpHTTPRequestAdapter,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.services = services
        self.request_adapter_class = request_adapter
        self.drain = drain
        settings = services.settings
        self.sockets = SocketCounts(SocketCaps.of(settings))

    async def create_websocket_response(
        self, request: web.Request, subprotocol: str | None
    ) -> web.WebSocketResponse:
        """A socket that pings its peer every keep-alive interval and drops it when
        the pong does not come (both protocols; graphql-transport-ws has no server ping)."""
        settings = self.services.settings
        response = web.WebSocketResponse(
            protocols=[subprotocol] if subprotocol else [],
            heartbeat=settings.ws_keep_alive_seconds,
            # A message is held whole like a JSON body, so it has the same limit (close 1009).
            max_msg_size=settings.max_json_bytes,
            compress=settings.ws_compression,
        )
        await response.prepare(request)
        request[UPGRADED] = True
        return response

    async def get_context(
        self, request: web.Request, response: web.Response | web.WebSocketResponse
    ) -> Context:
        websocket = isinstance(response, web.WebSocketResponse)
        if isinstance(response, web.WebSocketResponse):
            self.drain.track_socket(response)
        return Context(
            self.services,
            request=request,
            response=response,
            # A socket acts as nobody until ``connection_init`` admits its session (from the
            # payload or this header): see gateway/http/websocket.py.
            token=None if websocket else bearer_token(request.headers.get("Authorization")),
            websocket=websocket,
        )

    async def admit_registration(self, context: Any) -> bool:
        """Take from the client address's bucket of registrations; over it, the operation
        has run anyway and only its document is not remembered (the client's next hash-only
        request finds nothing and sends the text again)."""
        assert isinstance(context, Context)
        try:
            await context.rate_limit(Limit.PERSISTED_QUERIES)
        except RateLimited:
            log.debug("persisted query not registered: the client's registration limit is reached")
            if self.services.metrics is not None:
                self.services.metrics.count_rate_limited(Limit.PERSISTED_QUERIES.name.lower())
            return False
        return True

    async def render_graphql_ide(self, request: web.Request) -> web.Response:
        return await render_graphiql(request)


async def _connect(app: web.Application) -> None:
    """Connect and migrate, retrying while Cassandra is down; /readyz says 503 until then."""
    services = app[SERVICES]
    db = services.db
    while True:
        try:
            if not db.connected:
                await db.open()
            await asyncio.to_thread(migrate, db, services.settings.keyspace)
            app[READY].set()
            log.info("connected to Cassandra, keyspace %s", services.settings.keyspace)
            return
        except CassandraUnavailable as exc:
            log.warning("Cassandra not reachable yet (%s); retrying in %.0fs", exc, CONNECT_RETRY_SECONDS)
        except Exception as exc:
            log.warning("Cassandra not ready (%s); retrying in %.0fs", exc, CONNECT_RETRY_SECONDS)
            await asyncio.to_thread(db.shutdown)
        await asyncio.sleep(CONNECT_RETRY_SECONDS)


async def _on_startup(app: web.Application) -> None:
    app[CONNECTOR] = asyncio.create_task(_connect(app))
    await app[SERVICES].pubsub.start()
    app[WORKER_TASKS] = [asyncio.create_task(w.run(app[READY])) for w in app[COMPOSITION].workers]


async def _on_cleanup(app: web.Application) -> None:
    tasks = (app[CONNECTOR], *app[WORKER_TASKS])
    await cancel_and_wait(*tasks, what="the startup task and the domains' workers")
    await app[COMPOSITION].aclose()
    await asyncio.to_thread(app[SERVICES].db.shutdown)
    provider = app.get(OWN_TRACER_PROVIDER)
    if provider is not None:
        await asyncio.to_thread(provider.shutdown)


async def healthz(_: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    """503 while starting, draining, or without Cassandra; ``inFlight`` counts the requests
    being handled, ``pid`` names the process that answered. A lost broker shows as
    ``"broker": "unreachable"`` but keeps 200: queries and mutations still work, only
    live updates pause, and a broker shared by every process would otherwise take
    them all out of the load balancer at once."""
    app = request.app
    broker = app[SERVICES].pubsub.state
    drain = app[DRAIN]
    if drain.draining:
        return web.json_response(
            {"status": "draining", "broker": broker, "inFlight": drain.in_flight, "pid": os.getpid()},
            status=503,
        )
    if not app[READY].is_set():
        return web.json_response(
            {"status": "starting", "cassandra": "unreachable", "broker": broker}, status=503
        )
    db = app[SERVICES].db
    try:
        async with asyncio.timeout(2.0):
            await db.execute("SELECT release_version FROM system.local")
    except (CassandraUnavailable, TimeoutError):
        return web.json_response(
            {"status": "unavailable", "cassandra": "unreachable", "broker": broker}, status=503
        )
    return web.json_response(
        {
            "status": "ready",
            "cassandra": "ok",
            "keyspace": db.keyspace,
            "broker": broker,
            "inFlight": drain.in_flight,
            "pid": os.getpid(),
        }
    )


def _observe(services: Services, metrics: GatewayMetrics) -> None:
    """Hand the metrics what the broker, the presence board and the driver tell."""
    pubsub = services.pubsub
    metrics.set_broker_state(pubsub.state)
    metrics.set_broker_shards(0, 0)
    if isinstance(pubsub, RedisPubSub):
        pubsub.state_listener = metrics.set_broker_state
        pubsub.shards_listener = metrics.set_broker_shards
        metrics.set_broker_shards(1, 1)
    if isinstance(pubsub, RedisPubSub | InProcessPubSub):
        pubsub.lag_listener = metrics.observe_delivery_lag
    # The users domain's presence keeps its board there; the server names no domain.
    board = getattr(services.presence, "board", None)
    if isinstance(board, RedisPresenceBoard | MemoryPresenceBoard):
        board.claims_listener = metrics.set_presence_claims

    def cassandra_hosts() -> tuple[int, int]:
        if not services.db.connected:
            return 0, 0
        hosts = services.db.session.cluster.metadata.all_hosts()
        return len(hosts), sum(1 for host in hosts if host.is_up)

    metrics.cassandra_hosts.count = cassandra_hosts


def create_app(
    settings: Settings,
    *,
    db: Database | None = None,
    pubsub: PubSub | None = None,
    schema: strawberry.Schema | None = None,
    tracer_provider: trace.TracerProvider | None = None,
) -> web.Application:
    """The gateway over ``settings`` (parts made by ``gateway.composition.compose``);
    ``schema`` replaces the composed one (for tests that need a field no public schema has).
    Spans go to ``tracer_provider`` (an OpenTelemetry ``TracerProvider``) when given, else
    where the ``OTEL_*`` settings say (nowhere by default: ``gateway/tracing.py``)."""
    settings.validate()
    own_provider = None
    if tracer_provider is None:
        tracer_provider = own_provider = make_tracer_provider(settings)
    tracer = tracer_of(tracer_provider)
    composition = compose(settings, db=db, pubsub=pubsub, schema=schema, tracer=tracer)
    services = composition.services
    drain = Drain()
    admission = Admission(
        max_in_flight=settings.max_in_flight,
        max_statements=settings.max_queued_statements,
        retry_after=settings.shed_retry_after_seconds,
        statements=lambda: services.db.statements_in_flight,
        static_prefix=STATIC_PREFIX,
    )
    app = web.Application(
        client_max_size=settings.max_json_bytes, middlewares=[drain.middleware, admission.middleware]
    )
    app[SERVICES] = services
    app[COMPOSITION] = composition
    app[READY] = asyncio.Event()
    app[DRAIN] = drain
    app[ADMISSION] = admission
    if own_provider is not None:
        app[OWN_TRACER_PROVIDER] = own_provider
    limits = QueryLimits.of(settings)
    core_schema = graphql_schema(composition.schema)
    app[ENDPOINT] = Endpoint(
        core_schema,
        limits,
        settings.max_tokens,
        settings.max_json_bytes,
        settings.body_timeout_seconds,
    )
    metrics = install_metrics(app, Exposure(settings.metrics_open, settings.metrics_token))
    install_request_context(app, tracer)
    services.metrics = metrics
    admission.on_shed = metrics.count_shed
    if services.live is not None:
        services.live.on_delivered = metrics.delivered
    _observe(services, metrics)
    view = GatewayGraphQLView(
        services,
        drain=drain,
        request_adapter=composition.request_adapter,
        schema=composition.schema,
        graphql_ide="graphiql",
        allow_queries_via_get=True,
        multipart_uploads_enabled=True,
        subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL),
        connection_init_wait_timeout=timedelta(seconds=settings.ws_init_timeout_seconds),
        keep_alive_interval=settings.ws_keep_alive_seconds,
        query_limits=limits,
        max_batch=settings.max_batch,
        max_tokens=settings.max_tokens,
        max_response_bytes=settings.max_response_bytes,
        public_max_age=settings.public_max_age,
        allowed_origins=settings.cors_origins,
        persisted_queries=composition.persisted_queries,
    )
    app[SOCKETS] = view.sockets
    for method in ("GET", "POST"):
        app.router.add_route(method, "/graphql", view)
    composition.install_routes(app)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    add_static_routes(app)
    install_cors(app, settings.cors_origins)
    app.middlewares.append(compress_responses)
    app.on_startup.append(_on_startup)
    app.on_cleanup.append(_on_cleanup)
    return app
