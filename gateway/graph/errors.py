"""The contract's error codes, and the extension that applies them.

Resolvers, services and rules raise the domain's errors (``gateway/errors.py``),
and the GraphQL layer its own :class:`QueryTooComplex`. After each operation,
:class:`ErrorCodes` turns every error into one a client can act on:

- a ``GatewayError``: the code of its class (``CODES``), its ``field`` if any,
  message kept;
- ``CassandraUnavailable`` from the db layer: ``UNAVAILABLE``;
- GraphQL syntax / validation / variable errors: kept, with a code;
- anything else: masked as ``INTERNAL_SERVER_ERROR`` with a request id, and the
  original logged under that id (never shown to the client).

:class:`ErrorCode` lists every code a client can meet, from this module and from
the HTTP layer's refusals alike, and is printed into the schema as ``enum
ErrorCode`` so that client code generators emit it. ``tests/unit/test_error_codes.py``
reads every place in ``gateway/`` that sets a code and fails when one is missing
from the enum, or the enum holds one that nothing sets.
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import AsyncIterator, Container, Iterator
from contextlib import aclosing
from typing import Any

import strawberry
from graphql import GraphQLError, GraphQLSyntaxError
from graphql.execution import ExperimentalIncrementalExecutionResults
from strawberry.exceptions import MissingQueryError
from strawberry.extensions import SchemaExtension
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionContext as StrawberryExecutionContext
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from gateway.db.session import CassandraUnavailable
from gateway.errors import (
    BadUserInput,
    BrokerUnavailable,
    Conflict,
    Forbidden,
    GatewayError,
    NotFound,
    RateLimited,
    Unauthenticated,
    Unavailable,
)
from gateway.graph.executor_internals import KnownDocuments, SchemaExtensionsRunner
from gateway.graph.hooks import HookRunner

log = logging.getLogger("gateway.errors")


@strawberry.enum(
    description="Every value `extensions.code` takes on an error the gateway returns, over HTTP and over "
    "WebSocket alike. No field returns it: it is part of the schema so that code generators emit it, "
    "for clients to compare `error.extensions.code` against. An error about one argument or input "
    "field names it in `extensions.field`. Over HTTP, a request error (BAD_REQUEST, "
    "GRAPHQL_PARSE_FAILED, GRAPHQL_VALIDATION_FAILED, PERSISTED_QUERY_NOT_FOUND, and QUERY_TOO_COMPLEX "
    "before execution) comes without `data`."
)
class ErrorCode(enum.Enum):
    BAD_REQUEST = strawberry.enum_value(
        "BAD_REQUEST",
        description="The request itself is malformed, before any operation runs: a body that is not a "
        "GraphQL request, an unsupported content type or encoding, multipart out of the GraphQL "
        "multipart request spec, a body over its limit, a persisted-query extension out of spec, an "
        "operation a WebSocket does not run, or a subscription sent over plain HTTP (use the "
        "WebSocket). A request refused before GraphQL sees it answers its 4xx HTTP status. Repeating "
        "it unchanged fails again.",
    )
    BAD_USER_INPUT = strawberry.enum_value(
        "BAD_USER_INPUT",
        description="An argument or input field fails its rules (`extensions.field` names it: an input "
        "object's field by its own name), or variables do not coerce to their declared types. Fix the "
        "value; repeating it unchanged fails again.",
    )
    CONFLICT = strawberry.enum_value(
        "CONFLICT",
        description="A uniqueness rule or a cap was lost: a login, room name, post slug or folder label "
        "taken, an identity another user holds, a full room, as many rooms as one user may be in; or a "
        "concurrent change to the same thing won (another upload of the same address book in "
        "progress), and trying again later may succeed.",
    )
    FORBIDDEN = strawberry.enum_value(
        "FORBIDDEN",
        description="Signed in but not allowed: not the room's creator (deleteRoom), not a participant "
        "(a room's messages, postRoomMessage, roomMessages).",
    )
    GRAPHQL_PARSE_FAILED = strawberry.enum_value(
        "GRAPHQL_PARSE_FAILED",
        description="The document is not GraphQL: a syntax error, at the position the error's "
        "`locations` give. Over graphql-transport-ws the socket is closed with 4400 instead, as that "
        "protocol says.",
    )
    GRAPHQL_VALIDATION_FAILED = strawberry.enum_value(
        "GRAPHQL_VALIDATION_FAILED",
        description="The document parses but does not validate against this schema: an unknown field "
        "or argument, a missing required argument, a wrong type; or introspection while the gateway "
        "has it off.",
    )
    INTERNAL_SERVER_ERROR = strawberry.enum_value(
        "INTERNAL_SERVER_ERROR",
        description="Anything unexpected. The message is masked; `extensions.requestId` names the "
        "server log entry that has the details, for a bug report.",
    )
    NOT_FOUND = strawberry.enum_value(
        "NOT_FOUND",
        description="What an argument names does not exist, or is private to someone else (which is "
        "not told apart, so existence does not leak). A query for one missing thing (`user`, `room`, "
        "`post`, `node`, `me.email`) answers null instead.",
    )
    PERSISTED_QUERY_NOT_FOUND = strawberry.enum_value(
        "PERSISTED_QUERY_NOT_FOUND",
        description="A persisted query's sha256Hash the gateway does not know: send the query with its "
        "hash once and it is remembered (Apollo Client's persisted-queries link does that by itself). "
        "With trusted documents, an operation outside the list.",
    )
    QUERY_TOO_COMPLEX = strawberry.enum_value(
        "QUERY_TOO_COMPLEX",
        description="The request asks for more than one request may: depth, aliases, fragments, tokens, "
        "`first`/`last` over 100, list items in total, operations in a batch, the static cost, or "
        "the size of the response; `extensions.cost` and `extensions.limit` when it is the cost, "
        "`extensions.field` when it is one argument. Ask for less.",
    )
    RATE_LIMITED = strawberry.enum_value(
        "RATE_LIMITED",
        description="Too many attempts: wait `extensions.retryAfter` seconds (a whole number, at least "
        "1) before trying again.",
    )
    UNAUTHENTICATED = strawberry.enum_value(
        "UNAUTHENTICATED",
        description="No token, or an invalid or expired one, where one is needed: sign in again. Also a "
        "wrong login or password on signIn (one message for both).",
    )
    UNAVAILABLE = strawberry.enum_value(
        "UNAVAILABLE",
        description="Cassandra, or the broker live updates travel through, cannot answer right now, or "
        "the process is at its bound of work in flight (HTTP 503 with `Retry-After`, nothing ran). "
        "`extensions.retrySafe` says whether sending the same request again is harmless: always for "
        "queries, and for mutations sent with their idempotency key. A subscription it ends can be "
        "started again later; nothing stored is lost meanwhile.",
    )


class QueryTooComplex(GatewayError):
    """A request over the limits on how much one query may ask for."""


#: The code of each error class; a subclass without its own entry takes its base's.
CODES: dict[type[GatewayError], str] = {
    BadUserInput: "BAD_USER_INPUT",
    Unauthenticated: "UNAUTHENTICATED",
    Forbidden: "FORBIDDEN",
    NotFound: "NOT_FOUND",
    Conflict: "CONFLICT",
    QueryTooComplex: "QUERY_TOO_COMPLEX",
    BrokerUnavailable: "UNAVAILABLE",
    RateLimited: "RATE_LIMITED",
    Unavailable: "UNAVAILABLE",
    GatewayError: "INTERNAL_SERVER_ERROR",
}


def extensions_of(error: GatewayError) -> dict[str, Any]:
    """``extensions`` for a client: the code of ``error``'s class, its field if any, and
    ``retryAfter`` (whole seconds) when it is a rate limit."""
    code = next(CODES[cls] for cls in type(error).__mro__ if cls in CODES)
    extensions: dict[str, Any] = {"code": code}
    if error.field is not None:
        extensions["field"] = error.field
    if isinstance(error, RateLimited):
        extensions["retryAfter"] = error.retry_after
    if isinstance(error, Unavailable):
        extensions["retrySafe"] = error.retry_safe
    return extensions


UNAVAILABLE_MESSAGE = "Cassandra is unavailable right now; retrying later is safe."
UNAVAILABLE_UNSAFE_MESSAGE = (
    "Cassandra is unavailable right now; the change may or may not have been applied "
    "(send an idempotency key to make retries safe)."
)


def retry_safe(error: GraphQLError, keyed_fields: Container[str] | None) -> bool:
    """Whether repeating the request that failed with ``error`` is harmless.

    ``keyed_fields`` is None for a query (reads are always safe to repeat); for a
    mutation, the fields that carried their idempotency key: a write that timed
    out may have been applied, and only a keyed one is deduplicated on retry.
    """
    if keyed_fields is None:
        return True
    return error.path is not None and len(error.path) > 0 and str(error.path[0]) in keyed_fields


def classify(
    error: GraphQLError, request_id: str, keyed_fields: Container[str] | None = None
) -> GraphQLError:
    """The client-facing version of ``error``; ``keyed_fields`` as in :func:`retry_safe`."""
    original = error.original_error
    extensions: dict[str, Any]
    message = error.message
    if isinstance(original, GatewayError):
        extensions = extensions_of(original)
        message = original.message
    elif isinstance(original, CassandraUnavailable):
        log.warning("request %s: Cassandra unavailable: %s", request_id, original)
        safe = retry_safe(error, keyed_fields)
        extensions = {"code": "UNAVAILABLE", "retrySafe": safe}
        message = UNAVAILABLE_MESSAGE if safe else UNAVAILABLE_UNSAFE_MESSAGE
    elif message.startswith("Variable '$") or isinstance(original, GraphQLError):
        # Variable values that do not coerce to their declared types.
        extensions = {"code": "BAD_USER_INPUT"}
    elif original is not None:
        log.error("request %s: unexpected error", request_id, exc_info=original)
        extensions = {"code": "INTERNAL_SERVER_ERROR", "requestId": request_id}
        message = "Internal server error."
    elif error.extensions and "code" in error.extensions:
        extensions = dict(error.extensions)
    elif isinstance(error, GraphQLSyntaxError):
        code = "QUERY_TOO_COMPLEX" if "tokens" in message else "GRAPHQL_PARSE_FAILED"
        extensions = {"code": code}
    else:
        extensions = {"code": "GRAPHQL_VALIDATION_FAILED"}
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=None,
        extensions=extensions,
    )


class ErrorCodes(SchemaExtension):
    """Gives every error an ``extensions.code`` and masks unexpected ones."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if isinstance(result, ExperimentalIncrementalExecutionResults):
            # @defer/@stream: the initial result here; later payloads are classified as they
            # are sent (gateway/http/incremental.py).
            result = result.initial_result
        if result is None or not result.errors:
            return
        context = self.execution_context.context
        request_id = _request_id(context)
        keyed: Container[str] | None = None
        # A document that did not parse names no operation (and is no mutation).
        parsed = self.execution_context.graphql_document is not None
        if parsed and self.execution_context.operation_type == OperationType.MUTATION:
            keyed = getattr(context, "keyed_fields", set())
        result.errors = [classify(e, request_id, keyed) for e in result.errors]


def _over_socket(error: GraphQLError, request_id: str) -> GraphQLError:
    """``classify`` for a WebSocket result. A document that does not parse or names
    no operation stays as it is: ``graphql-transport-ws`` closes the socket with
    4400 for it, as its protocol says. An operation the socket does not run is
    ``BAD_REQUEST``, as over HTTP."""
    original = error.original_error
    if isinstance(original, CannotGetOperationTypeError):
        return error
    if isinstance(error, GraphQLSyntaxError) and "tokens" not in error.message:
        return error
    if isinstance(original, InvalidOperationTypeError | MissingQueryError):
        return GraphQLError(error.message, extensions={"code": "BAD_REQUEST"})
    return classify(error, request_id)


def _request_id(context: Any) -> str:
    return getattr(context, "request_id", None) or uuid.uuid4().hex


class ErrorCodeSchema(KnownDocuments, strawberry.Schema):
    """A schema whose every result carries classified errors.

    :class:`ErrorCodes` handles errors raised while an operation runs; errors
    that end an operation before it starts (a syntax error, the token limit)
    skip extension hooks, so ``execute`` classifies what is left. Classifying
    is idempotent. Strawberry's own error logging is replaced: client errors are
    not server faults, and unexpected ones are logged by :func:`classify`.
    Extension hooks run through :class:`~gateway.graph.hooks.HookRunner`; a document
    run before takes the lane of :class:`~gateway.graph.executor_internals.KnownDocuments`
    when the schema is built with ``known_documents``.
    """

    def create_extensions_runner(
        self, execution_context: StrawberryExecutionContext, extensions: list[SchemaExtension]
    ) -> SchemaExtensionsRunner:
        return HookRunner(execution_context=execution_context, extensions=extensions)

    async def execute(self, *args: Any, **kwargs: Any) -> ExecutionResult:
        result = await super().execute(*args, **kwargs)
        if isinstance(result, ExperimentalIncrementalExecutionResults):
            return result
        if result.errors:
            request_id = _request_id(kwargs.get("context_value"))
            result.errors = [classify(e, request_id) for e in result.errors]
        return result

    async def stream(self, *args: Any, **kwargs: Any) -> Any:
        """Every result a WebSocket sends (subscription events, and queries and
        mutations run over the socket), classified as ``execute`` classifies."""
        results = await super().stream(*args, **kwargs)
        request_id = _request_id(kwargs.get("context_value"))

        async def classified() -> AsyncIterator[Any]:
            async with aclosing(results):
                async for result in results:
                    if isinstance(result, ExecutionResult) and result.errors:
                        result.errors = [_over_socket(error, request_id) for error in result.errors]
                    yield result

        return classified()

    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        """Give domain errors their code as soon as Strawberry sees them: a
        subscription's errors reach the client without passing :class:`ErrorCodes`."""
        for error in errors:
            if isinstance(error.original_error, GatewayError):
                error.extensions = extensions_of(error.original_error)
