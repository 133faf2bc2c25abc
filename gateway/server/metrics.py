"""Prometheus metrics of a gateway process, and ``GET /metrics``.

Each application has its own :class:`GatewayMetrics` (its own registry), so
several apps in one process (the tests) never mix their numbers. With
``gateway serve --workers N`` the workers run prometheus-client's multiprocess
mode: :func:`prepare_multiprocess_metrics` is called by the supervisor before
it starts them, every worker writes its values to files in that directory, and
``/metrics`` on whichever worker answers the scrape adds up the files of all of
them (gauges with their ``multiprocess_mode``: live sums for connections,
subscriptions and presence claims, the live minimum for the broker and the live
maximum for its unreachable shards, so one worker without it shows). The Cassandra
hosts are read at each scrape, as the answering process's driver sees them.

Label values stay bounded: the operation name is chosen by the client, so only
the first :data:`MAX_OPERATION_NAMES` distinct names (per process) get their own
label; later ones, and names that are not GraphQL names, count as ``other``.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import os
import re
import shutil
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from aiohttp import hdrs, web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

#: The variable prometheus-client reads, at import, to write values to files.
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
MAX_OPERATION_NAMES = 200
ANONYMOUS = "anonymous"
OTHER = "other"
_GRAPHQL_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,99}")

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
STATEMENT_BUCKETS = (0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 100, 200, 500)
LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

#: The Cassandra hosts the driver knows and how many of them it sees up, read at a scrape.
HostCount = Callable[[], tuple[int, int]]


class CassandraHosts(Collector):
    """``gateway_cassandra_hosts`` and ``gateway_cassandra_hosts_up``, asked of the driver at
    each scrape (no value to keep between scrapes, and none for a process not yet connected)."""

    def __init__(self, count: HostCount | None = None) -> None:
        self.count = count

    def collect(self) -> Iterator[GaugeMetricFamily]:
        known, up = self.count() if self.count is not None else (0, 0)
        yield GaugeMetricFamily("gateway_cassandra_hosts", "Cassandra hosts the driver knows", value=known)
        yield GaugeMetricFamily(
            "gateway_cassandra_hosts_up",
            "Cassandra hosts the driver sees up (0: Cassandra unreachable)",
            value=up,
        )


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROCESS_ENV) or None


def prepare_multiprocess_metrics(directory: str | Path) -> dict[str, str]:
    """Empty ``directory`` for the values of a new set of workers; the environment
    variables to start them with. Call it before the workers start."""
    path = Path(directory)
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return {MULTIPROCESS_ENV: str(path)}


class OperationNames:
    """The label of an operation name: itself among the first ``limit`` distinct ones."""

    def __init__(self, limit: int = MAX_OPERATION_NAMES) -> None:
        self.limit = limit
        self._known: set[str] = set()

    def label(self, name: str | None) -> str:
        if not name:
            return ANONYMOUS
        if name in self._known:
            return name
        if len(self._known) >= self.limit or not _GRAPHQL_NAME.fullmatch(name):
            return OTHER
        self._known.add(name)
        return name


#: Set on a request once its WebSocket upgrade is answered (status 101).
UPGRADED = web.RequestKey("websocket_upgraded", bool)


class LoopCollector(Collector):
    """``gateway_asyncio_tasks``: the tasks alive on the event loop that answers the scrape,
    by the coroutine each runs (a function of the code: a bounded set of labels). Requests,
    sockets, subscriptions and background work each hold tasks, so a count that keeps growing
    across the same load is a leak, and its label says whose."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            tasks = asyncio.all_tasks()
        except RuntimeError:  # no running loop: collected outside a request
            return
        family = GaugeMetricFamily(
            "gateway_asyncio_tasks",
            "Tasks alive on the process's event loop, by coroutine",
            labels=["coroutine"],
        )
        by_coroutine = collections.Counter(_coroutine_name(task) for task in tasks)
        for name, count in sorted(by_coroutine.items()):
            family.add_metric([name], count)
        yield family


def _coroutine_name(task: asyncio.Task[object]) -> str:
    coroutine = task.get_coro()
    return getattr(coroutine, "__qualname__", None) or type(coroutine).__name__


M = TypeVar("M", Counter, Histogram)


class _Children(Generic[M]):
    """A labelled metric's children by their label values, looked up in a dict: its
    ``labels()`` checks and locks on every call, a few microseconds each, three times per
    request. The label values are bounded (operation names by :class:`OperationNames`,
    outcomes by the error codes, routes by the application), so the dict is too."""

    __slots__ = ("children", "metric")

    def __init__(self, metric: M) -> None:
        self.metric: M = metric
        self.children: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        child = self.children.get(values)
        if child is None:
            child = self.children[values] = self.metric.labels(*values)
        return child


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.operation_names = OperationNames()
        r = self.registry
        self.requests = Counter(
            "gateway_requests",
            "GraphQL operations, by operation name and outcome (ok, or the code of the first error)",
            ["operation", "outcome"],
            registry=r,
        )
        self.latency = Histogram(
            "gateway_request_duration_seconds",
            "Time to answer a GraphQL query or mutation, by operation name",
            ["operation"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.statements_per_request = Histogram(
            "gateway_request_cql_statements",
            "CQL statements one GraphQL query or mutation ran",
            buckets=STATEMENT_BUCKETS,
            registry=r,
        )
        self.statements = Counter(
            "gateway_cql_statements", "CQL statements run by GraphQL queries and mutations", registry=r
        )
        self.lwt_retries = Counter(
            "gateway_lwt_retries", "Compare-and-set attempts lost to another writer and retried", registry=r
        )
        self.websockets = Gauge(
            "gateway_websocket_connections",
            "Open WebSocket connections",
            multiprocess_mode="livesum",
            registry=r,
        )
        self.subscriptions = Gauge(
            "gateway_active_subscriptions", "Subscriptions running", multiprocess_mode="livesum", registry=r
        )
        self.rate_limited = Counter(
            "gateway_rate_limited", "Requests refused by a rate limit, by rule", ["rule"], registry=r
        )
        self.broker_up = Gauge(
            "gateway_broker_up",
            "1 when the broker (every shard of a Redis Cluster) answers, or none is configured; "
            "0 while it or one of its shards is unreachable",
            multiprocess_mode="livemin",
            registry=r,
        )
        self.broker_up.set(1)
        self.broker_shards = Gauge(
            "gateway_broker_shards",
            "Shards of the broker: the masters of a Redis Cluster, 1 for one Redis, 0 without a broker",
            multiprocess_mode="livemax",
            registry=r,
        )
        self.broker_shards_unreachable = Gauge(
            "gateway_broker_shards_unreachable",
            "Shards of the broker this process cannot reach (their channels' subscriptions are refused)",
            multiprocess_mode="livemax",
            registry=r,
        )
        self.delivery_lag = Histogram(
            "gateway_subscription_delivery_lag_seconds",
            "Seconds from an event's publication (in any process) to a subscription of this process "
            "taking it for delivery",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.presence_claims = Gauge(
            "gateway_presence_claims",
            "Users with a WebSocket open on this process: its claims on the presence board",
            multiprocess_mode="livesum",
            registry=r,
        )
        self.cassandra_hosts = CassandraHosts()
        r.register(self.cassandra_hosts)
        self.deliveries = Counter(
            "gateway_subscription_deliveries",
            "Subscription results written to sockets by the live hub",
            registry=r,
        )
        self.delivery_statements = Counter(
            "gateway_subscription_delivery_cql_statements",
            "CQL statements run to deliver subscription events (per event and selection, never per socket)",
            registry=r,
        )
        self.shed = Counter(
            "gateway_requests_shed",
            "HTTP requests refused at once (503) because the process was at a bound: in-flight "
            "requests (requests) or CQL statements in flight (statements)",
            ["reason"],
            registry=r,
        )
        self.http_requests = Counter(
            "gateway_http_requests", "HTTP requests, by route and status", ["route", "status"], registry=r
        )
        self.requests_by = _Children(self.requests)
        self.latency_by = _Children(self.latency)
        self.http_requests_by = _Children(self.http_requests)
        # The process's own numbers (resident memory, open files, CPU) and its loop's tasks.
        # One process's alone: with --workers the scrape adds up the workers' files instead,
        # where these would be only the answering worker's, so they are left out there.
        ProcessCollector(registry=r)
        r.register(LoopCollector())

    # -- hooks for other parts ------------------------------------------------

    def operation_answered(
        self, name: str | None, outcome: str, seconds: float, statements: int, lwt_retries: int
    ) -> None:
        """A GraphQL query or mutation answered (``gateway.graph.observability``)."""
        label = self.operation_names.label(name)
        self.requests_by(label, outcome).inc()
        self.latency_by(label).observe(seconds)
        self.statements_per_request.observe(statements)
        if statements:
            self.statements.inc(statements)
        if lwt_retries:
            self.lwt_retries.inc(lwt_retries)

    def delivered(self, deliveries: int, statements: int) -> None:
        """One event delivered by the live hub (``gateway.graph.live``)."""
        self.deliveries.inc(deliveries)
        if statements:
            self.delivery_statements.inc(statements)

    def subscription_started(self) -> None:
        self.subscriptions.inc()

    def subscription_ended(self, name: str | None, outcome: str) -> None:
        """A subscription's end counts as one request with the outcome of its last result."""
        self.subscriptions.dec()
        self.requests_by(self.operation_names.label(name), outcome).inc()

    def set_broker_state(self, state: str) -> None:
        """The broker's state as ``PubSub.state`` names it."""
        self.broker_up.set(1 if state in ("ok", "in-process") else 0)

    def set_broker_shards(self, unreachable: int, shards: int) -> None:
        """How many of the broker's shards this process cannot reach, of how many."""
        self.broker_shards_unreachable.set(unreachable)
        self.broker_shards.set(shards)

    def observe_delivery_lag(self, seconds: float) -> None:
        """An event taken by a subscription, ``seconds`` after it was published."""
        self.delivery_lag.observe(seconds)

    def set_presence_claims(self, users: int) -> None:
        self.presence_claims.set(users)

    def count_rate_limited(self, rule: str) -> None:
        """A refusal that does not reach a GraphQL result (GraphQL ``RATE_LIMITED`` errors
        are counted from the results, under the rule in their extensions)."""
        self.rate_limited.labels(rule).inc()

    def count_shed(self, reason: str) -> None:
        """A request refused by ``gateway.server.admission``."""
        self.shed.labels(reason).inc()

    # -- exposition -------------------------------------------------------------

    def exposition(self) -> bytes:
        directory = multiprocess_dir()
        if directory is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]  # prometheus-client 0.26: unannotated
        registry.register(self.cassandra_hosts)
        return generate_latest(registry)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """HTTP requests by route and status; open WebSockets (the handler returns when one closes)."""
        websocket = request.headers.get("Upgrade", "").lower() == "websocket"
        if websocket:
            self.websockets.inc()
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        except asyncio.CancelledError:
            # A socket's handler may end cancelled (its peer went away); the upgrade happened.
            if request.get(UPGRADED):
                status = 101
            raise
        finally:
            if websocket:
                self.websockets.dec()
            resource = request.match_info.route.resource
            route = resource.canonical if resource is not None else "unmatched"
            self.http_requests_by(route, str(status)).inc()


METRICS = web.AppKey("metrics", GatewayMetrics)


@dataclass(frozen=True)
class Exposure:
    """Who may read ``/metrics``: anyone (``open``), the holder of ``token``, or nobody (404)."""

    open: bool
    token: str

    def allows(self, authorization: str | None) -> bool:
        if self.open:
            return True
        given = (authorization or "").strip().encode("utf-8", "surrogateescape")
        return hmac.compare_digest(given, f"Bearer {self.token}".encode())


EXPOSURE = web.AppKey("metrics_exposure", Exposure)


async def metrics_endpoint(request: web.Request) -> web.Response:
    """The exposition, to whoever :class:`Exposure` admits. Metrics name operations, error rates
    and load: on a real cluster they are for the operator's scraper, not for the internet."""
    exposure = request.app[EXPOSURE]
    if not exposure.open and not exposure.token:
        raise web.HTTPNotFound()
    if not exposure.allows(request.headers.get(hdrs.AUTHORIZATION)):
        raise web.HTTPUnauthorized(
            text="/metrics needs the bearer token of GATEWAY_METRICS_TOKEN.",
            headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
        )
    body = request.app[METRICS].exposition()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def install(app: web.Application, exposure: Exposure) -> GatewayMetrics:
    """``/metrics`` and the HTTP middleware on ``app``; add it first, so it sees every answer."""
    metrics = GatewayMetrics()
    app[METRICS] = metrics
    app[EXPOSURE] = exposure
    app.middlewares.insert(0, metrics.middleware)
    app.router.add_get("/metrics", metrics_endpoint)
    return metrics
