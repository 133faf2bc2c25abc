"""What ``/graphql`` accepts before any operation runs: body sizes, and request errors.

A JSON request body is read whole, so it is small (``GATEWAY_MAX_JSON_BYTES``);
a multipart upload streams (:mod:`gateway.mail.uploads`) and has its own limits.
A request that is refused before GraphQL sees it raises :class:`RequestRefused`
(or Strawberry's plain ``HTTPException``); the view answers both as a GraphQL
error with ``extensions.code`` and the exception's status.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from cross_web import AiohttpHTTPRequestAdapter, HTTPException
from graphql import GraphQLSchema

from gateway.graph.limits import QueryLimits
from gateway.http.jsoncodec import loads


class RequestRefused(HTTPException):
    """A request error with its status and ``extensions.code`` (``BAD_REQUEST`` unless told)."""

    def __init__(self, status_code: int, reason: str, code: str = "BAD_REQUEST") -> None:
        super().__init__(status_code, reason)
        self.code = code


def bad_request(reason: str) -> RequestRefused:
    return RequestRefused(400, reason)


def too_large(what: str, limit: int) -> RequestRefused:
    return RequestRefused(413, f"{what} is larger than {limit} bytes.")


#: The deepest nesting of arrays and objects a JSON request may have: GraphQL
#: inputs are rarely more than a few levels deep, and every consumer of the value
#: (variable coercion, the cost walk) recurses once per level.
MAX_JSON_DEPTH = 64

NOT_JSON = "Unable to parse request body as JSON"
NOT_AN_OBJECT = "The request's JSON must be an object, or for a batch an array of objects."


def _depth_within(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(current, dict):
            children = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


def parse_request_json(data: str | bytes) -> dict[str, Any] | list[dict[str, Any]]:
    """The request's JSON: an object, or a batch of them, nested at most ``MAX_JSON_DEPTH`` deep.

    JSON parsing alone lets through bytes that are not UTF-8 (``UnicodeDecodeError``),
    nesting deeper than the interpreter's recursion limit (``RecursionError``), and
    scalars where Strawberry expects an object; each is a ``BAD_REQUEST`` here.
    """
    try:
        value = loads(data)
    except (ValueError, RecursionError) as exc:
        raise bad_request(NOT_JSON) from exc
    if not (isinstance(value, dict) or (isinstance(value, list) and all(isinstance(v, dict) for v in value))):
        raise bad_request(NOT_AN_OBJECT)
    if not _depth_within(value, MAX_JSON_DEPTH):
        raise bad_request(f"The request's JSON nests deeper than {MAX_JSON_DEPTH} levels.")
    return value


@dataclass(frozen=True)
class Endpoint:
    """The ``/graphql`` endpoint's schema and limits, for checks that run before the view's."""

    schema: GraphQLSchema
    limits: QueryLimits
    max_tokens: int
    max_json_bytes: int


ENDPOINT = web.AppKey("graphql_endpoint", Endpoint)


class BoundedRequestAdapter(AiohttpHTTPRequestAdapter):
    """Reads a JSON body only up to ``Endpoint.max_json_bytes`` (the application's
    ``client_max_size`` is set to the same value)."""

    async def get_body(self) -> bytes:
        limit = self.request.app[ENDPOINT].max_json_bytes
        length = self.request.content_length
        if length is not None and length > limit:
            raise too_large("The request body", limit)
        try:
            return await super().get_body()
        except web.HTTPRequestEntityTooLarge as exc:
            raise too_large("The request body", limit) from exc
