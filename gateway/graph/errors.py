"""The contract's error codes, and the extension that applies them.

Resolvers raise :class:`GatewayError` subclasses. After each operation,
:class:`ErrorCodes` turns every error into one a client can act on:

- ``GatewayError``: its code (and ``field`` for bad input), message kept;
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

log = logging.getLogger("gateway.errors")


class GatewayError(Exception):
    code = "INTERNAL_SERVER_ERROR"

    def __init__(self, message: str, **extensions: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extensions = {"code": self.code, **extensions}


class BadUserInput(GatewayError):
    code = "BAD_USER_INPUT"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)
        self.field = field


class Unauthenticated(GatewayError):
    code = "UNAUTHENTICATED"

    def __init__(self, message: str = "You must be signed in.") -> None:
        super().__init__(message)


class Forbidden(GatewayError):
    code = "FORBIDDEN"


class NotFound(GatewayError):
    code = "NOT_FOUND"


class Conflict(GatewayError):
    code = "CONFLICT"


class QueryTooComplex(GatewayError):
    code = "QUERY_TOO_COMPLEX"


UNAVAILABLE_MESSAGE = "Cassandra is unavailable right now; retrying later is safe."


def classify(error: GraphQLError, request_id: str) -> GraphQLError:
    """The client-facing version of ``error``."""
    original = error.original_error
    extensions: dict[str, Any]
    message = error.message
    if isinstance(original, GatewayError):
        extensions = dict(original.extensions)
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
        return None
