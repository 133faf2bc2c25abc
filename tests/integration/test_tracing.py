"""Tracing with the OpenTelemetry SDK's in-memory exporter: the spans of a request form
one trace (HTTP, then the operation, then one span per CQL round trip), a caller's
``traceparent`` is their parent and goes on to the webhooks the request calls, and
broker publishes and live deliveries are spans too. Off (the suite's other gateways),
nothing is traced at all."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from multidict import CIMultiDict
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from gateway.server.app import READY, SERVICES, create_app
from gateway.settings import Settings
from tests.support.client import Account, Api
from tests.support.contacts import REQUEST, fresh_phone
from tests.support.messenger import listening, send
from tests.support.processes import start_gateway
from tests.support.webhook import CodeReceiver

CONVERSATION = """query Conversation($with: String!) { me { conversation(with: $with) {
  id unreadCount partnerReadAt
  messages(first: 10) { edges { cursor node { id content sentAt sender { login firstname } } } }
} } }"""

Traced = tuple[Api, InMemorySpanExporter, web.Application]


@pytest.fixture
async def traced(base_settings: Settings, server: Any) -> AsyncIterator[Traced]:
    """A gateway over the run's keyspace whose spans go to an in-memory exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = create_app(base_settings, tracer_provider=provider)
    test_server = TestServer(app, host="127.0.0.1")
    await test_server.start_server()
    try:
        await asyncio.wait_for(app[READY].wait(), timeout=120)
        yield Api(str(test_server.make_url(""))), exporter, app
    finally:
        await test_server.close()
        provider.shutdown()


async def post(
    api: Api, query: str, variables: dict[str, Any], *, token: str | None = None, **headers: str
) -> tuple[dict[str, Any], CIMultiDict[str]]:
    """The JSON answer and the headers of one POST, sent with ``headers``."""
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with (
        aiohttp.ClientSession() as http,
        http.post(api.url, json={"query": query, "variables": variables}, headers=headers) as response,
    ):
        assert response.status == 200
        return await response.json(), response.headers.copy()


def trace_of(spans: Sequence[ReadableSpan], request_id: str) -> list[ReadableSpan]:
    """The spans of the trace whose HTTP span is the request ``request_id``'s."""
    (root,) = [s for s in spans if (s.attributes or {}).get("gateway.request_id") == request_id]
    assert root.context is not None
    return [s for s in spans if s.context is not None and s.context.trace_id == root.context.trace_id]


def tree(spans: Sequence[ReadableSpan]) -> str:
    """The trace as an indented tree, sibling spans of one name counted together (and the
    children shown of the first of them)."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)
    ids = {span.context.span_id for span in spans if span.context is not None}
    roots = [s for s in spans if s.parent is None or s.parent.span_id not in ids]
    lines: list[str] = []

    def walk(level: list[ReadableSpan], depth: int) -> None:
        names = Counter(span.name for span in level)
        for name, count in names.items():
            lines.append(f"{'  ' * depth}{name}" + (f" x{count}" if count > 1 else ""))
            for span in level:
                if span.name == name and span.context is not None:
                    walk(children.get(span.context.span_id, []), depth + 1)
                    break

    walk(roots, 0)
    return "\n".join(lines)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def talk(api: Api) -> tuple[Account, Account]:
    alice = await api.sign_up("tracea")
    bob = await api.sign_up("traceb", firstname="Bob")
    for n in range(3):
        await send(api, bob, alice.login, f"hello {n}")
    return alice, bob


async def test_one_conversation_query_is_one_trace_whose_cql_spans_are_its_statements(
    traced: Traced, base_settings: Settings
) -> None:
    api, exporter, _ = traced
    alice, bob = await talk(api)
    exporter.clear()
    body, headers = await post(
        api, CONVERSATION, {"with": bob.login}, token=alice.token, **{"X-Request-Id": "conversation-1"}
    )
    assert len(body["data"]["me"]["conversation"]["messages"]["edges"]) == 3
    statements = body["extensions"]["cql"]["statements"]
    assert headers["X-Request-Id"] == "conversation-1"

    spans = trace_of(exporter.get_finished_spans(), "conversation-1")
    print(f"trace of one conversation query ({statements} statements):\n{tree(spans)}")
    (http,) = [s for s in spans if s.kind is SpanKind.SERVER]
    (operation,) = [s for s in spans if s.name == "query Conversation"]
    cql = [s for s in spans if attrs(s).get("db.system.name") == "cassandra"]
    assert len(spans) == 2 + len(cql), tree(spans)
    assert len(cql) == statements > 0
    assert http.name == "POST /graphql" and http.parent is None
    assert attrs(http)["http.response.status_code"] == 200
    assert operation.parent is not None and http.context is not None
    assert operation.parent.span_id == http.context.span_id
    assert attrs(operation) == {
        "graphql.operation.type": "query",
        "graphql.operation.name": "Conversation",
        "graphql.operation.cost": body["extensions"]["cost"]["total"],
        "gateway.outcome": "ok",
        "gateway.cql.statements": statements,
    }
    assert operation.context is not None
    for span in cql:
        described = attrs(span)
        assert span.kind is SpanKind.CLIENT
        assert span.parent is not None and span.parent.span_id == operation.context.span_id
        assert span.name == f"{described['db.operation.name']} {described['db.collection.name']}"
        assert described["db.namespace"] == base_settings.keyspace
        assert described["db.cassandra.consistency_level"] == base_settings.consistency
        assert isinstance(described["db.response.returned_rows"], int)
    collections = {attrs(span)["db.collection.name"] for span in cql}
    # The session is known to the process since the sign-up: no read of it.
    assert "users" in collections and "sessions" not in collections
    messages = [s for s in cql if attrs(s)["db.response.returned_rows"] == 3]
    assert messages, "the page of three messages is one of the reads"


async def test_a_callers_traceparent_is_the_parent_and_goes_on_to_the_webhook(
    traced: Traced, codes: CodeReceiver
) -> None:
    api, exporter, _ = traced
    account = await api.sign_up("tracep")
    exporter.clear()
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    delivered = len(codes.traceparents)
    body, headers = await post(
        api,
        REQUEST,
        {"network": "tel", "networkId": fresh_phone()},
        token=account.token,
        traceparent=f"00-{trace_id}-{parent_id}-01",
    )
    assert body["data"] == {"requestIdentityVerification": True}
    (http,) = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert http.context is not None and http.parent is not None
    assert (format(http.context.trace_id, "032x"), format(http.parent.span_id, "016x")) == (
        trace_id,
        parent_id,
    )
    assert http.parent.is_remote
    # The operator's sender is called within the same trace.
    (sent,) = codes.traceparents[delivered:]
    assert sent is not None and sent.split("-")[1] == trace_id
    assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", sent)
    assert len(headers["X-Request-Id"]) == 32


async def test_publishes_and_live_deliveries_are_spans(traced: Traced) -> None:
    api, exporter, app = traced
    alice = await api.sign_up("tracew")
    bob = await api.sign_up("tracex")
    async with listening(api, app, bob) as (listener,):
        exporter.clear()
        body, _ = await post(
            api,
            'mutation Send($to: String!) { sendMessage(to: $to, content: "live") { id } }',
            {"to": bob.login},
            token=alice.token,
            **{"X-Request-Id": "send-1"},
        )
        event = await listener.next()
        assert event["id"] == body["data"]["sendMessage"]["id"]
        spans = exporter.get_finished_spans()
    sent = trace_of(spans, "send-1")
    print(f"trace of one sendMessage:\n{tree(sent)}")
    (mutation,) = [s for s in sent if s.name == "mutation Send"]
    publishes = [s for s in sent if s.kind is SpanKind.PRODUCER]
    assert publishes and all(s.name == "publish user:*:messages" for s in publishes)
    assert {attrs(s)["messaging.destination.name"] for s in publishes} >= {f"user:{bob.login}:messages"}
    cql = [s for s in sent if attrs(s).get("db.system.name") == "cassandra"]
    assert len(cql) == attrs(mutation)["gateway.cql.statements"] > 0
    deliveries = [
        s
        for s in spans
        if s.kind is SpanKind.CONSUMER
        and attrs(s)["messaging.destination.name"] == f"user:{bob.login}:messages"
    ]
    (delivery,) = deliveries
    assert delivery.name == "deliver user:*:messages"
    assert attrs(delivery)["gateway.delivered"] == 1
    # A delivery is a trace of its own: the channel's reader serves every subscriber.
    assert delivery.parent is None
    delivered = [
        s for s in spans if s.context and delivery.context and s.context.trace_id == delivery.context.trace_id
    ]
    assert (
        len([s for s in delivered if attrs(s).get("db.system.name")])
        == attrs(delivery)["gateway.cql.statements"]
    )
    # The subscription itself is a span of the socket, ended when the socket went.
    subscriptions = [s for s in exporter.get_finished_spans() if s.name.startswith("subscription")]
    assert [s.kind for s in subscriptions] == [SpanKind.SERVER]


async def test_tracing_is_off_unless_the_otel_settings_turn_it_on(app: web.Application) -> None:
    services = app[SERVICES]
    assert services.tracer is None and services.db.tracer is None and services.pubsub.tracer is None
    assert Settings().trace_exporters == ()
    assert Settings(otel_exporter_otlp_endpoint="http://collector:4318").trace_exporters == ("otlp",)
    assert (
        Settings(otel_traces_exporter=("none",), otel_exporter_otlp_endpoint="http://c:4318").trace_exporters
        == ()
    )
    assert Settings(otel_traces_exporter=("console",), otel_sdk_disabled=True).trace_exporters == ()
    assert Settings(otel_traces_exporter=("otlp",)).otlp_traces_url == "http://localhost:4318/v1/traces"


class Collector:
    """An OpenTelemetry collector's OTLP/HTTP receiver, as far as traces go: it keeps the
    spans POSTed to ``/v1/traces``."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, Any], Any]] = []
        app = web.Application()
        app.router.add_post("/v1/traces", self._receive)
        self.server = TestServer(app, host="127.0.0.1")

    async def _receive(self, request: web.Request) -> web.Response:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.read())
        for resource_spans in export.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                self.spans.extend((resource, span) for span in scope_spans.spans)
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")


async def test_a_served_gateway_logs_the_request_id_on_every_line_and_exports_its_spans(
    base_settings: Settings, server: Any, tmp_path: Path
) -> None:
    """``gateway serve`` with the OTEL_* variables a deployment sets: the spans reach the
    collector over OTLP/HTTP in the caller's trace, and every line logged for the request
    (aiohttp's access line and the operation's) carries its id and its trace's."""
    collector = Collector()
    await collector.server.start_server()
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    try:
        gateway = await start_gateway(
            base_settings,
            tmp_path,
            GATEWAY_LOG_FORMAT="json",
            GATEWAY_LOG_LEVEL="INFO",
            GATEWAY_HTTP_ACCESS_LOG="1",
            OTEL_EXPORTER_OTLP_ENDPOINT=str(collector.server.make_url("")),
            OTEL_SERVICE_NAME="gateway-under-test",
        )
        try:
            body, headers = await post(
                gateway.api,
                "query Ping { __typename }",
                {},
                **{"X-Request-Id": "served-1", "traceparent": f"00-{trace_id}-b7ad6b7169203331-01"},
            )
            assert body["data"] == {"__typename": "Query"} and headers["X-Request-Id"] == "served-1"
        finally:
            # Stopping sends what the batch processor still holds.
            assert await gateway.stop() == 0, gateway.output()
    finally:
        await collector.server.close()

    lines = [json.loads(line) for line in gateway.log.read_text().splitlines() if line.startswith("{")]
    mine = [line for line in lines if line.get("requestId") == "served-1"]
    assert {line["logger"] for line in mine} == {"aiohttp.access", "gateway.access"}, gateway.output()
    assert all(line["traceId"] == trace_id for line in mine)
    assert not [line for line in lines if "served-1" in line["message"] and line not in mine]

    exported = {span.name: (resource, span) for resource, span in collector.spans}
    assert {"POST /graphql", "query Ping"} <= set(exported), sorted(exported)
    resource, http = exported["POST /graphql"]
    assert resource["service.name"] == "gateway-under-test"
    assert http.trace_id.hex() == trace_id and http.parent_span_id.hex() == "b7ad6b7169203331"
    assert exported["query Ping"][1].parent_span_id == http.span_id
