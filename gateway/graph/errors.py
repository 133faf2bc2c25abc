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
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import strawberry
from graphql import GraphQLError, GraphQLSyntaxError
from strawberry.extensions import SchemaExtension

from gateway.db.session import CassandraUnavailable
from gateway.errors import (
    BadUserInput,
    BrokerUnavailable,
    Conflict,
    Forbidden,
    GatewayError,
    NotFound,
    Unauthenticated,
)

log = logging.getLogger("gateway.errors")


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
    GatewayError: "INTERNAL_SERVER_ERROR",
}


def extensions_of(error: GatewayError) -> dict[str, Any]:
    """``extensions`` for a client: the code of ``error``'s class, and its field if any."""
    code = next(CODES[cls] for cls in type(error).__mro__ if cls in CODES)
    return {"code": code} if error.field is None else {"code": code, "field": error.field}


UNAVAILABLE_MESSAGE = "Cassandra is unavailable right now; retrying later is safe."


def classify(error: GraphQLError, request_id: str) -> GraphQLError:
    """The client-facing version of ``error``."""
    original = error.original_error
    extensions: dict[str, Any]
    message = error.message
    if isinstance(original, GatewayError):
        extensions = extensions_of(original)
        message = original.message
    elif isinstance(original, CassandraUnavailable):
        log.warning("request %s: Cassandra unavailable: %s", request_id, original)
        extensions = {"code": "UNAVAILABLE"}
        message = UNAVAILABLE_MESSAGE
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
        errors = getattr(result, "errors", None)
        if not errors:
            return
        request_id = _request_id(self.execution_context.context)
        result.errors = [classify(e, request_id) for e in errors]  # type: ignore[union-attr]


def _request_id(context: Any) -> str:
    return getattr(context, "request_id", None) or uuid.uuid4().hex


class ErrorCodeSchema(strawberry.Schema):
    """A schema whose every result carries classified errors.

    :class:`ErrorCodes` handles errors raised while an operation runs; errors
    that end an operation before it starts (a syntax error, the token limit)
    skip extension hooks, so ``execute`` classifies what is left. Classifying
    is idempotent. Strawberry's own error logging is replaced: client errors are
    not server faults, and unexpected ones are logged by :func:`classify`.
    """

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        result = await super().execute(*args, **kwargs)
        if getattr(result, "errors", None):
            request_id = _request_id(kwargs.get("context_value"))
            result.errors = [classify(e, request_id) for e in result.errors]
        return result

    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        """Give domain errors their code as soon as Strawberry sees them: a
        subscription's errors reach the client without passing :class:`ErrorCodes`."""
        for error in errors:
            if isinstance(error.original_error, GatewayError):
                error.extensions = extensions_of(error.original_error)
