"""Every GraphQL operation measured and logged, in one place.

:class:`Observed` is the outermost schema extension, so when an operation ends
its errors already carry their codes (``ErrorCodes`` runs inside it). It feeds
the process's :class:`OperationRecorder` (``Services.metrics``, the Prometheus
metrics of ``gateway/server/metrics.py``) and writes one access
line per operation to the ``gateway.access`` logger, with the ``requestId`` a
masked error of the operation carries.

- Queries and mutations (over HTTP or a WebSocket) count when they answer:
  outcome, latency, and the CQL statements they ran. Statements are measured
  per operation, so the operations of one batched request are told apart.
- A subscription is an active one from its start to its end, and counts (with
  the outcome of its last result) when it ends; its lifetime is no latency.
- ``RATE_LIMITED`` errors count as refusals, under their ``extensions.rule``.

With tracing on, every operation is a span (``query ConversationPage``, with its type,
name, cost, outcome and statements), the current one while it runs, so the spans of its
CQL statements are its children; over HTTP it is the child of the request's span.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any, Protocol

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from gateway.db.session import RequestMetrics, current_metrics, measuring
from gateway.errors import GatewayError
from gateway.graph.errors import extensions_of
from gateway.tracing import CurrentSpan, Span, SpanKind, Status, StatusCode, Tracer

access_log = logging.getLogger("gateway.access")

RATE_LIMITED = "RATE_LIMITED"
#: Outcomes that are the server's fault: the operation's span is marked failed.
SERVER_FAULTS = frozenset({"INTERNAL_SERVER_ERROR", "UNAVAILABLE"})


def outcome_of(errors: list[GraphQLError] | None, failure: BaseException | None = None) -> str:
    """``ok``, or the code of the first error."""
    if failure is not None:
        if isinstance(failure, GatewayError):
            return str(extensions_of(failure)["code"])
        return "INTERNAL_SERVER_ERROR"
    if not errors:
        return "ok"
    return str((errors[0].extensions or {}).get("code") or "INTERNAL_SERVER_ERROR")


class OperationRecorder(Protocol):
    """Where operations are counted (the process's metrics)."""

    def operation_answered(
        self, name: str | None, outcome: str, seconds: float, statements: int, lwt_retries: int
    ) -> None:
        """A query or mutation answered."""

    def subscription_started(self) -> None: ...

    def subscription_ended(self, name: str | None, outcome: str) -> None: ...

    def count_rate_limited(self, rule: str) -> None: ...


def _operation_name(execution: Any) -> str | None:
    try:
        name: str | None = execution.operation_name
    except Exception:  # an operation name that the document does not have
        return None
    return name


def _metrics_of(context: Any) -> OperationRecorder | None:
    services = getattr(context, "services", None)
    return getattr(services, "metrics", None)


class Observed(SchemaExtension):
    def __init__(self, *, execution_context: Any = None) -> None:
        super().__init__(execution_context=execution_context)
        self._operation = RequestMetrics()
        self._subscription = False
        self._request_id: str | None = None

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context.context
        services = getattr(context, "services", None)
        tracer: Tracer | None = getattr(services, "tracer", None)
        if tracer is None:
            yield from self._observed(context)
            return
        kind = SpanKind.SERVER if getattr(context, "websocket", False) else SpanKind.INTERNAL
        current = CurrentSpan(tracer, "graphql", kind=kind)
        failure: BaseException | None = None
        try:
            yield from self._observed(context)
        except Exception as exc:
            failure = exc
            raise
        finally:
            try:
                self._describe(current.span, failure)
            finally:
                current.leave(failure)

    def _observed(self, context: Any) -> Iterator[None]:
        metrics = _metrics_of(context)
        if metrics is None:
            yield
            return
        start = time.perf_counter()
        failure: BaseException | None = None
        try:
            yield
        except (GeneratorExit, Exception) as exc:
            # A subscription that its client ends, or the socket closing, is a normal end.
            failure = None if isinstance(exc, GeneratorExit) else exc
            raise
        finally:
            try:
                self._finish(metrics, context, time.perf_counter() - start, failure)
            except Exception:
                logging.getLogger(__name__).exception("could not record an operation")

    def _describe(self, span: Span, failure: BaseException | None) -> None:
        """The operation span's name (``query ConversationPage``) and what it cost."""
        execution = self.execution_context
        kind = execution.operation_type.value if execution.graphql_document is not None else None
        name = _operation_name(execution)
        if kind is not None:
            span.update_name(f"{kind} {name}" if name else kind)
            span.set_attribute("graphql.operation.type", kind)
        if name:
            span.set_attribute("graphql.operation.name", name)
        outcome = outcome_of(getattr(execution.result, "errors", None), failure)
        span.set_attribute("gateway.outcome", outcome)
        span.set_attribute("gateway.cql.statements", self._operation.statements)
        if outcome in SERVER_FAULTS and failure is None:
            span.set_status(Status(StatusCode.ERROR, outcome))

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context.context
        self._request_id = getattr(context, "request_id", None)
        if self.execution_context.operation_type is OperationType.SUBSCRIPTION:
            metrics = _metrics_of(context)
            if metrics is not None:
                self._subscription = True
                metrics.subscription_started()
        self._operation = RequestMetrics(outer=current_metrics.get())
        with measuring(self._operation):
            yield

    def _finish(
        self, metrics: OperationRecorder, context: Any, seconds: float, failure: BaseException | None
    ) -> None:
        execution = self.execution_context
        result = execution.result
        errors = getattr(result, "errors", None)
        outcome = outcome_of(errors, failure)
        name = _operation_name(execution)
        statements = self._operation.statements
        if self._subscription:
            metrics.subscription_ended(name, outcome)
        else:
            metrics.operation_answered(name, outcome, seconds, statements, self._operation.lwt_retries)
        for error in errors or ():
            extensions = error.extensions or {}
            if extensions.get("code") == RATE_LIMITED:
                metrics.count_rate_limited(str(extensions.get("rule") or RATE_LIMITED))
        if access_log.isEnabledFor(logging.INFO):
            self._log(context, name, outcome, seconds, statements)

    def _log(self, context: Any, name: str | None, outcome: str, seconds: float, statements: int) -> None:
        execution = self.execution_context
        kind = execution.operation_type.value if execution.graphql_document is not None else "unknown"
        request_id = self._request_id or getattr(context, "request_id", None)
        user = getattr(context, "login", None)
        duration_ms = round(seconds * 1000, 3)
        access_log.info(
            "%s %s %s %.1fms statements=%d user=%s requestId=%s",
            kind,
            name or "anonymous",
            outcome,
            duration_ms,
            statements,
            user or "-",
            request_id,
            extra={
                "requestId": request_id,
                "operation": name,
                "operationType": kind,
                "transport": "ws" if getattr(context, "websocket", False) else "http",
                "user": user,
                "durationMs": duration_ms,
                "statements": statements,
                "lwtRetries": self._operation.lwt_retries,
                "outcome": outcome,
            },
        )
