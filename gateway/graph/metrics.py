"""Per-request CQL statement counting.

While an operation runs, the request's ``RequestMetrics`` is the current one
for the db layer, which counts every round trip into it (DataLoader batches
run in tasks that inherit the context, so they count too). With
``GATEWAY_QUERY_METRICS`` on, the totals go back to the client in
``extensions.cql``; tests and benchmarks read them there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from strawberry.extensions import SchemaExtension

from gateway.db.session import measuring


class StatementMetrics(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        context = self.execution_context.context
        if getattr(context, "websocket", False):
            context.fresh()
        metrics = getattr(context, "metrics", None)
        if metrics is None:
            yield
            return
        with measuring(metrics):
            yield

    def get_results(self) -> dict[str, Any]:
        return statement_totals(self.execution_context.context)


def statement_totals(context: Any) -> dict[str, Any]:
    """The request's ``extensions.cql`` so far (empty with ``GATEWAY_QUERY_METRICS`` off).
    A deferred query's later payloads run after the operation's hooks have ended: the
    last of them reports the whole request's totals (``gateway/http/incremental.py``)."""
    settings = getattr(context, "settings", None)
    if settings is None or not settings.query_metrics:
        return {}
    metrics = context.metrics
    return {"cql": {"statements": metrics.statements, "lwtRetries": metrics.lwt_retries}}
