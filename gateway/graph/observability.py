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
  the outcome of its last result) when it ends; its lifetime is no latency. One the
  live hub parks (``gateway/graph/live.py``) ends with its follow, not when its
  resolver returns: its count, access line and span are recorded then, with the
  outcome of what ended it.
- ``RATE_LIMITED`` errors count as refusals, under their ``extensions.rule``.

With tracing on, every operation is a span (``query ConversationPage``, with its type,
name, cost, outcome and statements), the current one while it runs, so the spans of its
CQL statements are its children; over HTTP it is the child of the request's span.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from functools import partial
from typing import Any, Protocol

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from gateway.db.session import RequestMetrics, current_metrics, measuring
from gateway.errors import GatewayError
from gateway.graph.errors import extensions_of
from gateway.graph.live import CURRENT_OPERATION
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
                parked = _parked() if self._subscription and failure is None else None
                if parked is None:
                    current.leave(failure)
                else:  # the subscription's span lasts as long as the subscription
                    parked.add_done_callback(partial(_span_ended, current))

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
                line = self._line(context, failure)
                parked = _parked()
                if parked is not None and self._subscription and failure is None:
                    # The live hub follows on without this operation: it ends with the follow.
                    parked.add_done_callback(partial(_ended, metrics, line, start))
                else:
                    line.record(metrics, time.perf_counter() - start)
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

    def _line(self, context: Any, failure: BaseException | None) -> _Line:
        """What is recorded of the operation, read from its execution now."""
        execution = self.execution_context
        result = execution.result
        errors = getattr(result, "errors", None)
        name = _operation_name(execution)
        kind = execution.operation_type.value if execution.graphql_document is not None else "unknown"
        return _Line(
            context,
            kind,
            name,
            outcome_of(errors, failure),
            self._subscription,
            self._operation.statements,
            self._operation.lwt_retries,
            self._request_id or getattr(context, "request_id", None),
            [
                str((error.extensions or {}).get("rule") or RATE_LIMITED)
                for error in errors or ()
                if (error.extensions or {}).get("code") == RATE_LIMITED
            ],
        )


def _parked() -> asyncio.Future[BaseException | None] | None:
    """The end of the live follow the current operation handed to the hub, if it did."""
    operation = CURRENT_OPERATION.get()
    follow = operation.parked if operation is not None else None
    return follow.ended if follow is not None else None


def _span_ended(current: CurrentSpan, ended: asyncio.Future[Any]) -> None:
    error = None if ended.cancelled() else ended.result()
    current.leave(error if isinstance(error, BaseException) else None)


def _ended(metrics: OperationRecorder, line: _Line, start: float, ended: asyncio.Future[Any]) -> None:
    """A parked subscription's end: recorded with the outcome of what ended it."""
    try:
        error = None if ended.cancelled() else ended.result()
        if error is not None:
            line.outcome = outcome_of(None, error)
        line.record(metrics, time.perf_counter() - start)
    except Exception:
        logging.getLogger(__name__).exception("could not record an operation")


class _Line:
    """One operation's metrics and access line."""

    __slots__ = (
        "context", "kind", "lwt_retries", "name", "outcome", "rate_limited", "request_id", "statements",
        "subscription",
    )  # fmt: skip

    def __init__(
        self,
        context: Any,
        kind: str,
        name: str | None,
        outcome: str,
        subscription: bool,
        statements: int,
        lwt_retries: int,
        request_id: str | None,
        rate_limited: list[str],
    ) -> None:
        self.context = context
        self.kind = kind
        self.name = name
        self.outcome = outcome
        self.subscription = subscription
        self.statements = statements
        self.lwt_retries = lwt_retries
        self.request_id = request_id
        self.rate_limited = rate_limited

    def record(self, metrics: OperationRecorder, seconds: float) -> None:
        if self.subscription:
            metrics.subscription_ended(self.name, self.outcome)
        else:
            metrics.operation_answered(self.name, self.outcome, seconds, self.statements, self.lwt_retries)
        for rule in self.rate_limited:
            metrics.count_rate_limited(rule)
        if access_log.isEnabledFor(logging.INFO):
            self._log(seconds)

    def _log(self, seconds: float) -> None:
        context = self.context
        user = getattr(context, "login", None)
        duration_ms = round(seconds * 1000, 3)
        args = (
            self.kind,
            self.name or "anonymous",
            self.outcome,
            duration_ms,
            self.statements,
            user or "-",
            self.request_id,
        )
        fields = {
            "requestId": self.request_id,
            "operation": self.name,
            "operationType": self.kind,
            "transport": "ws" if getattr(context, "websocket", False) else "http",
            "user": user,
            "durationMs": duration_ms,
            "statements": self.statements,
            "lwtRetries": self.lwt_retries,
            "outcome": self.outcome,
        }
        # The one handler the record would reach writes the line from its fields, when it can
        # (the JSON handler, gateway/server/logs.py): no record, no trip through the logger.
        write = getattr(_sole_handler(access_log), "write_fields", None)
        if write is not None and write(access_log.name, logging.INFO, _ACCESS % args, fields):
            return
        # Made and handled as ``access_log.info`` would, without its search of the stack for
        # the caller (no line shows it; it was a fifth of the line's cost).
        record = access_log.makeRecord(
            access_log.name, logging.INFO, __file__, 0, _ACCESS, args, None, "_log", fields
        )
        access_log.handle(record)


_ACCESS = "%s %s %s %.1fms statements=%d user=%s requestId=%s"


def _sole_handler(logger: logging.Logger) -> logging.Handler | None:
    """The handler a record of ``logger`` would reach when it is the only one, with no filter
    of ``logger`` before it (``Logger.callHandlers``' walk up the loggers); None otherwise."""
    if logger.filters or logger.disabled:
        return None
    found: logging.Handler | None = None
    current: logging.Logger | None = logger
    while current is not None:
        for handler in current.handlers:
            if found is not None:
                return None
            found = handler
        if not current.propagate:
            break
        current = current.parent
    return found
