"""What ties a response, its log lines and its spans to one request: the request id and
the trace context.

**Request ids.** A request's id is the ``X-Request-Id`` it was sent with, when that is
printable ASCII of at most :data:`MAX_REQUEST_ID` characters, or one made here
(:data:`new_request_id`). The HTTP layer puts it in :data:`request_id` for the whole
of the request (every task the request starts inherits it), every response echoes it,
and every log line written meanwhile carries it (``gateway/server/logs.py``). A
WebSocket's operations and subscription events get ids of their own.

**Spans.** Tracing is OpenTelemetry's, off unless the ``OTEL_*`` settings turn it on
(:func:`tracer_provider`). The parts that make spans (the HTTP middleware, the
GraphQL operation, each CQL round trip, broker publishes, live deliveries) are handed
a :class:`~opentelemetry.trace.Tracer`, or None when tracing is off, and test for None
before anything else: tracing off costs an attribute test per span not made. A
request's W3C ``traceparent`` makes its spans part of the caller's trace, and is
passed on to the webhooks the request calls (:func:`outgoing_headers`), also with
tracing off.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.settings import Settings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

__all__ = [
    "REQUEST_ID_HEADER",
    "CurrentSpan",
    "Span",
    "SpanKind",
    "Status",
    "StatusCode",
    "Tracer",
    "accepted_request_id",
    "annotate",
    "new_request_id",
    "outgoing_headers",
    "remote_context",
    "request_id",
    "trace_id",
    "tracer_of",
    "tracer_provider",
]

log = logging.getLogger(__name__)

REQUEST_ID_HEADER = "X-Request-Id"
TRACEPARENT_HEADER = "traceparent"

#: The longest ``X-Request-Id`` taken as sent; a longer one is replaced by a new id.
MAX_REQUEST_ID = 128
_REQUEST_ID = re.compile(rf"[\x21-\x7e]{{1,{MAX_REQUEST_ID}}}")
#: A W3C ``traceparent``: version, trace id, parent span id, flags.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")

#: The id of the request being handled (None outside one).
request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
#: The ``traceparent`` the request came with, when valid (passed on to webhooks with tracing off).
_traceparent: ContextVar[str | None] = ContextVar("traceparent", default=None)


class _RequestIds:
    """Request ids: 32 hex digits, a random half drawn once per process and a counting half.

    Unique across processes and restarts like a random UUID, without reading the
    system's random source on every request (a system call for each)."""

    def __init__(self) -> None:
        self._counter = itertools.count()
        self._prefix = os.urandom(8).hex()
        os.register_at_fork(after_in_child=self._new_process)

    def _new_process(self) -> None:
        self._prefix = os.urandom(8).hex()

    def __call__(self) -> str:
        return f"{self._prefix}{next(self._counter):016x}"


#: A new request id.
new_request_id = _RequestIds()


def accepted_request_id(sent: str | None) -> str:
    """``sent`` when it is 1 to :data:`MAX_REQUEST_ID` printable ASCII characters (no
    blanks, nothing a log line or a header could be split by); a new id otherwise."""
    if sent is not None and _REQUEST_ID.fullmatch(sent):
        return sent
    return new_request_id()


def valid_traceparent(value: str | None) -> str | None:
    """``value`` when it is a W3C ``traceparent`` a receiver may use (version 00, or a later
    one read as 00; neither id all zeros), else None."""
    if not value:
        return None
    match = _TRACEPARENT.match(value.strip())
    if match is None or match.group(1) == "ff":
        return None
    if match.group(2) == "0" * 32 or match.group(3) == "0" * 16:
        return None
    if match.group(1) == "00" and len(value.strip()) != 55:
        return None
    return match.group(0)


def begin_request(sent_id: str | None, traceparent: str | None) -> str:
    """Make the request's id and trace context current (for the rest of the task that
    handles it, and the tasks it starts); returns the id."""
    rid = accepted_request_id(sent_id)
    request_id.set(rid)
    if traceparent is not None:
        _traceparent.set(valid_traceparent(traceparent))
    return rid


def remote_context(headers: Mapping[str, str]) -> otel_context.Context | None:
    """The trace context a request's ``traceparent`` (and ``tracestate``) carries, or None
    (its spans then start a trace of their own)."""
    if TRACEPARENT_HEADER not in headers:
        return None
    context = TraceContextTextMapPropagator().extract(headers)
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def trace_id() -> str | None:
    """The current trace's id (32 hex digits): the current span's, or with tracing off the
    one the request's ``traceparent`` named; None when there is neither."""
    span_context = trace.get_current_span().get_span_context()
    if span_context.is_valid:
        return format(span_context.trace_id, "032x")
    parent = _traceparent.get()
    return parent[3:35] if parent else None


def outgoing_headers() -> dict[str, str]:
    """Headers that carry the trace on to a service the request calls: the current span's
    ``traceparent`` (and ``tracestate``), or with tracing off the request's own, unchanged."""
    carrier: dict[str, str] = {}
    if trace.get_current_span().get_span_context().is_valid:
        TraceContextTextMapPropagator().inject(carrier)
    else:
        parent = _traceparent.get()
        if parent:
            carrier[TRACEPARENT_HEADER] = parent
    return carrier


def tracer_of(provider: Any) -> Tracer | None:
    """The gateway's tracer of ``provider`` (an OpenTelemetry ``TracerProvider``), None for None."""
    if provider is None:
        return None
    tracer: Tracer = provider.get_tracer("gateway")
    return tracer


def tracer_provider(settings: Settings) -> TracerProvider | None:
    """A ``TracerProvider`` exporting where the ``OTEL_*`` settings say, or None when they
    leave tracing off (the SDK is then not even imported). Spans are exported in batches
    off the event loop; the caller shuts the provider down at exit, which sends the rest."""
    exporters = settings.trace_exporters
    if not exporters:
        return None
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: settings.otel_service_name}))
    for name in exporters:
        exporter: SpanExporter
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(endpoint=settings.otlp_traces_url)
        else:
            exporter = ConsoleSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    log.info("tracing on: spans go to %s", ", ".join(exporters))
    return provider


class CurrentSpan:
    """A span made the current one from :meth:`enter` to :meth:`leave`, for code that cannot
    use a ``with`` block (an extension's hook, a generator) and whose end may come in
    another task (a WebSocket operation abandoned by its client, finalised by the loop):
    the span then still ends, and the context is left alone, since it is not that task's."""

    __slots__ = ("_task", "_token", "span")

    def __init__(
        self,
        tracer: Tracer,
        name: str,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Mapping[str, Any] | None = None,
        parent: otel_context.Context | None = None,
    ) -> None:
        self.span = tracer.start_span(name, context=parent, kind=kind, attributes=attributes)
        self._token = otel_context.attach(trace.set_span_in_context(self.span, parent))
        self._task = _current_task()

    def leave(self, error: BaseException | None = None) -> None:
        if self._task is _current_task():
            otel_context.detach(self._token)
        if error is not None:
            failed(self.span, error)
        self.span.end()


def annotate(key: str, value: str | int | float | bool) -> None:
    """Set an attribute of the current span (nothing without one)."""
    trace.get_current_span().set_attribute(key, value)


def failed(span: Span, error: BaseException) -> None:
    """Mark ``span`` as failed by ``error``."""
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, type(error).__name__))


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None
