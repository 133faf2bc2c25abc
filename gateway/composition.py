"""The composition root: the one place that builds a process's parts from the settings
and hands them to each other.

:func:`compose` makes the Cassandra session's users (the domains' stores, through
:class:`~gateway.graph.context.Services`), the broker and what lives in it (pub/sub,
rate-limit state, persisted queries, session revocations), the schema of
``gateway/schema.py``, and what the domains add to the process beside GraphQL: the
mail domain's download route and streaming upload adapter, the contacts domain's
fan-out worker. The server (``gateway/server/app.py``) receives a
:class:`Composition` and knows no domain; the domains receive their collaborators
(a store, a ``PubSub``) and know neither the server nor this module.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import strawberry
from aiohttp import web
from cross_web import AiohttpHTTPRequestAdapter

from gateway.broker.memory import InProcessPubSub, MemoryPresenceBoard
from gateway.broker.presence import PresenceBoard
from gateway.broker.pubsub import PubSub
from gateway.broker.redis_client import BrokerClient, close_within, redis_client
from gateway.broker.redis_presence import RedisPresenceBoard
from gateway.broker.redis_pubsub import RedisPubSub
from gateway.contacts.fanout import FanoutWorker
from gateway.contacts.service import ContactDirectory
from gateway.db.session import Database
from gateway.graph.context import Context, Services
from gateway.graph.executor_internals import graphql_schema
from gateway.graph.live import LiveHub
from gateway.http.client_address import request_address_key
from gateway.http.persisted import DocumentStore, PersistedQueries
from gateway.http.persisted import from_settings as persisted_queries
from gateway.http.redis_documents import RedisDocumentStore
from gateway.http.session_watch import SessionWatch
from gateway.mail import routes as mail_routes
from gateway.mail.uploads import StreamingUploadAdapter
from gateway.messenger.store import MessengerStore
from gateway.messenger.typing import TypingExpiry
from gateway.ratelimit.limiter import RateLimiter
from gateway.ratelimit.redis_limiter import RedisRateLimiter
from gateway.rooms.member_store import MemberStore
from gateway.schema import build_schema, event_codec
from gateway.settings import Settings
from gateway.tracing import Tracer
from gateway.users.presence import Presence
from gateway.users.presence_store import PresenceStore
from gateway.users.session_cache import SessionCache
from gateway.users.store import SessionStore

#: Seconds a rate-limit or persisted-query call may wait for the broker.
BROKER_CALL_TIMEOUT = 1.0
#: Seconds a burst of such calls may wait for one of the process's 64 broker connections.
#: Long: a busy broker is not a lost one. A lost one does not make callers wait here
#: (a connection that cannot be made frees its slot within BROKER_CALL_TIMEOUT); a burst
#: on a starved machine can, and must not be refused for it.
BROKER_POOL_WAIT = 30.0


class Worker(Protocol):
    """Background work a domain runs for the life of the process, once Cassandra is ready."""

    async def run(self, ready: asyncio.Event) -> None: ...


@dataclass
class Composition:
    services: Services
    schema: strawberry.Schema
    persisted_queries: PersistedQueries
    #: Reads ``/graphql`` requests (the mail domain's streams uploads into Cassandra).
    request_adapter: type[AiohttpHTTPRequestAdapter]
    #: Adds the domains' own routes and middlewares to the application.
    install_routes: Callable[[web.Application], None]
    workers: list[Worker] = field(default_factory=list)
    #: The connection pool of state kept in the broker; None without one.
    broker_client: BrokerClient | None = None

    async def aclose(self) -> None:
        """Let go of the live hub and the broker (its pub/sub and its pool); the database is
        the server's."""
        if self.services.live is not None:
            await self.services.live.aclose()
        await self.services.pubsub.aclose()
        if self.broker_client is not None:
            await close_within(self.broker_client.aclose(), "the broker client")


def pubsub_of(settings: Settings) -> PubSub:
    """The broker of ``GATEWAY_BROKER_URL``, channels namespaced by keyspace; in-process without one."""
    if not settings.broker_url:
        return InProcessPubSub()
    return RedisPubSub(settings.broker_url, event_codec(), namespace=settings.keyspace)


def broker_client(settings: Settings) -> BrokerClient | None:
    """The connection pool for state kept in the broker (rate limits, persisted queries);
    None without ``GATEWAY_BROKER_URL``. Calls fail fast: callers decide what a failure means."""
    if not settings.broker_url:
        return None
    return redis_client(
        settings.broker_url,
        max_connections=64,
        timeout=BROKER_CALL_TIMEOUT,
        retries=1,
        read_timeout=BROKER_CALL_TIMEOUT,
        pool_timeout=BROKER_POOL_WAIT,
    )


def limiter_of(client: BrokerClient | None, settings: Settings) -> RateLimiter | None:
    """Rate-limit state in the broker, namespaced by keyspace; None: in this process."""
    return None if client is None else RedisRateLimiter(client, namespace=settings.keyspace)


def board_of(client: BrokerClient | None, settings: Settings) -> PresenceBoard:
    """Presence in the broker, namespaced by keyspace; without one, this process's sockets."""
    if client is None:
        return MemoryPresenceBoard()
    ttl = settings.presence_ttl_seconds
    return RedisPresenceBoard(client, namespace=settings.keyspace, ttl=ttl, refresh=ttl / 3)


def documents_of(client: BrokerClient | None, settings: Settings) -> DocumentStore | None:
    """Persisted queries in the broker, namespaced by keyspace; None: in this process."""
    return None if client is None else RedisDocumentStore(client, namespace=settings.keyspace)


def compose(
    settings: Settings,
    *,
    db: Database | None = None,
    pubsub: PubSub | None = None,
    schema: strawberry.Schema | None = None,
    tracer: Tracer | None = None,
) -> Composition:
    """Every part of a gateway process over ``settings``; ``schema`` replaces the composed
    one (for tests that need a field no public schema has). ``tracer``: the spans of CQL
    statements, operations, publishes and live deliveries (None: tracing is off)."""
    db = db or Database(settings)
    db.tracer = tracer
    sessions = SessionCache(SessionStore(db, settings), settings)
    shared = broker_client(settings)
    trusted = settings.trusted_proxies
    pubsub = pubsub or pubsub_of(settings)
    pubsub.tracer = tracer
    services = Services(
        settings=settings,
        db=db,
        pubsub=pubsub,
        authenticate=sessions.login_of,
        # A socket's sessions are read from Cassandra, past the cache: each of its operations
        # looks its session up again, the socket's own check for a revocation it was not told of.
        session_of=sessions.store.active,
        limiter=limiter_of(shared, settings),
        address_of=lambda request: request_address_key(request, trusted),
        tracer=tracer,
    )
    services.provide(sessions)
    fanout = FanoutWorker(services.store(ContactDirectory).store, services.pubsub, settings)
    schema = schema or build_schema(settings)

    def event_context(viewer: str | None, token: str | None) -> Context:
        context = Context(services, token=token, websocket=True)
        if viewer is None:
            context.anonymous()
        else:
            context.signed_in_as(viewer, token or "")
        return context

    services.live = LiveHub(
        services.pubsub,
        graphql_schema(schema),
        event_context,
        schema.execution_context_class,
        recheck_seconds=settings.live_recheck_seconds,
        tracer=tracer,
    )
    presence = Presence(
        board_of(shared, settings),
        services.store(PresenceStore),
        services.pubsub,
        talk_partners_of=services.store(MessengerStore).talk_partners,
        room_mates_of=services.store(MemberStore).room_mates,
        deliver_here=services.live.inject,
        recheck=min(5.0, settings.presence_ttl_seconds / 3),
    )
    services.provide(presence)
    services.presence = presence
    typing = TypingExpiry(services.live.inject, seconds=settings.typing_seconds)
    services.provide(typing)
    sessions_watch = SessionWatch(services.pubsub, sessions.store.active, sessions)
    services.provide(sessions_watch)
    return Composition(
        services=services,
        schema=schema,
        persisted_queries=persisted_queries(
            settings.trusted_documents, settings.introspection_allowed, documents_of(shared, settings)
        ),
        request_adapter=StreamingUploadAdapter,
        install_routes=lambda app: mail_routes.install(app, services),
        workers=[fanout, presence, typing, sessions_watch],
        broker_client=shared,
    )
