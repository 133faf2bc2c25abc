"""``@defer`` and ``@stream`` over HTTP: incremental delivery as ``multipart/mixed``.

A query holding either directive is executed by graphql-core's incremental executor
(``ExperimentalIncrementalExecutionResults``: an initial result, then the deferred
fragments and streamed items as they resolve); Strawberry's view writes each payload
as one part of a ``multipart/mixed`` response, prepared and written as it comes, so the
compression middleware (which only compresses whole bodies) leaves it alone. A
document without them executes as before, on the plain-field executor, and answers one
JSON body.

The payloads take the shape the client asked for in ``Accept``:

- ``multipart/mixed;incrementalSpec=v0.2``: graphql-core's own format (graphql-js
  17.0.0-alpha.9: ``pending`` with ids, ``incremental`` entries naming their ``id`` and
  ``subPath``, ``completed``), Apollo Client 4's ``GraphQL17Alpha9Handler``;
- any other ``multipart/mixed`` (``deferSpec=20220824``, Apollo Client 4's
  ``Defer20220824Handler``, Apollo Router's default): each ``incremental`` entry carries
  its ``path`` (for streamed items, the index of the first item) and ``label``, and a
  deferred fragment or stream that failed is an entry with ``data``/``items`` null and
  its errors.

Errors in later payloads are coded and masked as the initial result's are; the CQL
statements of the whole request are in the last payload's ``extensions.cql`` (the
first one counts those of the initial result only). A payload over the response size
limit is replaced by the ``QUERY_TOO_COMPLEX`` error and ends the response.

Refused, with ``BAD_REQUEST``: a deferred query whose client does not accept
``multipart/mixed`` (406, before anything is sent: a client that cannot read the parts
would otherwise get a partial answer it takes for the whole), and one inside a batch.
Over a WebSocket graphql-core's validation refuses ``@defer``/``@stream`` in a
subscription; a query with them sent over the socket is refused by Strawberry's
graphql-transport-ws handler (``gateway/http/sockets.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from graphql import GraphQLError
from graphql.execution import (
    ExperimentalIncrementalExecutionResults,
    IncrementalDeferResult,
    InitialIncrementalExecutionResult,
    SubsequentIncrementalExecutionResult,
)

from gateway.db.session import measuring
from gateway.graph.errors import classify
from gateway.graph.metrics import statement_totals

V02 = "v0.2"
DEFER_20220824 = "20220824"

NOT_ACCEPTED = (
    "This query uses @defer or @stream, whose results come as `multipart/mixed` parts: send "
    "`Accept: multipart/mixed;deferSpec=20220824, application/json` (or "
    "`multipart/mixed;incrementalSpec=v0.2`), or remove the directives."
)
IN_A_BATCH = "@defer and @stream are not served inside a batch: send the query on its own."


def incremental_spec(accept: str | None) -> str | None:
    """The payload format of the first ``multipart/mixed`` range ``accept`` lists, if any."""
    for media_range in (accept or "").split(","):
        media_type, *params = (part.strip() for part in media_range.split(";"))
        if media_type.lower() != "multipart/mixed":
            continue
        wanted = {
            name.strip().lower(): value.strip().strip('"')
            for name, _, value in (param.partition("=") for param in params)
        }
        if wanted.get("q") in ("0", "0.0", "0.00", "0.000"):
            continue
        return V02 if wanted.get("incrementalspec") == V02 else DEFER_20220824
    return None


@dataclass
class Delivery:
    """One response's incremental delivery: what it announced and where its streams are."""

    spec: str
    request_id: str
    limit: int
    #: pending id -> (path, label)
    pending: dict[str, tuple[list[str | int], str | None]] = field(default_factory=dict)
    #: pending id of a stream -> the index its next items start at
    positions: dict[str, int] = field(default_factory=dict)
    ended: bool = False

    def _announce(self, pending: Any, data: Any) -> None:
        for announced in pending or ():
            self.pending[announced.id] = (list(announced.path), announced.label)
            listed = _at(data, announced.path)
            if isinstance(listed, list):
                self.positions[announced.id] = len(listed)

    def initial(self, result: InitialIncrementalExecutionResult, response: dict[str, Any]) -> dict[str, Any]:
        self._announce(result.pending, result.data)
        if self.spec == V02:
            response["pending"] = [announced.formatted for announced in result.pending]
        response["hasNext"] = result.has_next
        if result.extensions:
            response["extensions"] = result.extensions
        return response

    def subsequent(self, result: SubsequentIncrementalExecutionResult) -> dict[str, Any]:
        for entry in [*(result.incremental or ()), *(result.completed or ())]:
            if entry.errors:
                entry.errors = [classify(error, self.request_id) for error in entry.errors]
        if self.spec == V02:
            payload: dict[str, Any] = dict(result.formatted)
            for announced in result.pending or ():
                self.pending[announced.id] = (list(announced.path), announced.label)
            return payload
        incremental: list[dict[str, Any]] = []
        for entry in result.incremental or ():
            path, label = self.pending[entry.id]
            path = path + list(entry.sub_path or ())
            if isinstance(entry, IncrementalDeferResult):
                part: dict[str, Any] = {"data": entry.data, "path": path}
                for announced in result.pending or ():
                    if announced.id not in self.pending:
                        self.pending[announced.id] = (list(announced.path), announced.label)
                        listed = _at(entry.data, announced.path[len(path) :])
                        if isinstance(listed, list):
                            self.positions[announced.id] = len(listed)
            else:
                start = self.positions.get(entry.id, 0)
                self.positions[entry.id] = start + len(entry.items)
                part = {"items": entry.items, "path": [*path, start]}
            if label is not None:
                part["label"] = label
            if entry.errors:
                part["errors"] = [error.formatted for error in entry.errors]
            if entry.extensions:
                part["extensions"] = entry.extensions
            incremental.append(part)
        for announced in result.pending or ():
            self.pending.setdefault(announced.id, (list(announced.path), announced.label))
        for completed in result.completed or ():
            if completed.errors:
                # A fragment or stream that failed as a whole: 20220824 says so with a null entry.
                path, label = self.pending[completed.id]
                key = "items" if completed.id in self.positions else "data"
                failed: dict[str, Any] = {key: None, "path": path}
                if label is not None:
                    failed["label"] = label
                failed["errors"] = [error.formatted for error in completed.errors]
                incremental.append(failed)
        payload = {"hasNext": result.has_next}
        if incremental:
            payload["incremental"] = incremental
        if result.extensions:
            payload["extensions"] = result.extensions
        return payload

    def bounded(self, payload: dict[str, Any], size: int) -> dict[str, Any] | None:
        """``payload``'s replacement when it is over the limit (and the response then ends)."""
        if size <= self.limit:
            return None
        self.ended = True
        message = (
            f"A part of the response would be {size} bytes, more than the limit of {self.limit}: "
            "ask for fewer items or fewer fields per request."
        )
        error = {"message": message, "extensions": {"code": "QUERY_TOO_COMPLEX", "limit": self.limit}}
        return {"errors": [error], "hasNext": False}


DELIVERY = web.RequestKey("incremental_delivery", Delivery)
#: Whether the request is a batch (a list of operations).
BATCHED = web.RequestKey("graphql_batch", bool)


def _at(data: Any, path: Any) -> Any:
    for key in path:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def measured(
    results: ExperimentalIncrementalExecutionResults, context: Any, delivery: Delivery
) -> ExperimentalIncrementalExecutionResults:
    """``results`` whose later payloads count their statements into the request's metrics
    (the last one reports the whole request's) and stop once ``delivery`` has ended."""
    source = results.subsequent_results
    metrics = getattr(context, "metrics", None)

    async def subsequent() -> AsyncGenerator[SubsequentIncrementalExecutionResult, None]:
        with measuring(metrics) if metrics is not None else contextlib.nullcontext():
            async with contextlib.aclosing(source):
                async for result in source:
                    if delivery.ended:
                        return
                    if not result.has_next:
                        totals = statement_totals(context)
                        if totals:
                            result.extensions = {**(result.extensions or {}), **totals}
                    yield result

    return ExperimentalIncrementalExecutionResults(
        initial_result=results.initial_result, subsequent_results=subsequent()
    )


async def abandon(results: ExperimentalIncrementalExecutionResults) -> None:
    """Stop a deferred execution whose parts will not be sent."""
    subsequent: AsyncIterator[Any] = results.subsequent_results
    close = getattr(subsequent, "aclose", None)
    if close is not None:
        await close()


def refusal(message: str) -> GraphQLError:
    return GraphQLError(message, extensions={"code": "BAD_REQUEST"})
