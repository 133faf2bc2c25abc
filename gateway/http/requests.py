"""What ``/graphql`` accepts before any operation runs: body sizes, and request errors.

A JSON request body is read whole, so it is small (``GATEWAY_MAX_JSON_BYTES``);
a multipart upload streams (:mod:`gateway.mail.uploads`) and has its own limits.
A request that is refused before GraphQL sees it raises :class:`RequestRefused`
(or Strawberry's plain ``HTTPException``); the view answers both as a GraphQL
error with ``extensions.code`` and the exception's status.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web
from cross_web import AiohttpHTTPRequestAdapter, HTTPException
from graphql import GraphQLSchema

from gateway.graph.limits import QueryLimits


class RequestRefused(HTTPException):
    """A request error with its status and ``extensions.code`` (``BAD_REQUEST`` unless told)."""

    def __init__(self, status_code: int, reason: str, code: str = "BAD_REQUEST") -> None:
        super().__init__(status_code, reason)
        self.code = code


def bad_request(reason: str) -> RequestRefused:
    return RequestRefused(400, reason)


def too_large(what: str, limit: int) -> RequestRefused:
    return RequestRefused(413, f"{what} is larger than {limit} bytes.")


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
