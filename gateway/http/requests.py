"""What ``/graphql`` accepts before any operation runs: body sizes, and request errors.

A JSON request body is read whole, so it is small (``GATEWAY_MAX_JSON_BYTES``);
a multipart upload streams (:mod:`gateway.mail.uploads`) and has its own limits.
A request that is refused before GraphQL sees it raises :class:`RequestRefused`
(or Strawberry's plain ``HTTPException``); the view answers both as a GraphQL
error with ``extensions.code`` and the exception's status.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import StreamReader, web
from cross_web import AiohttpHTTPRequestAdapter, HTTPException
from graphql import GraphQLSchema

from gateway.graph.limits import QueryLimits
from gateway.http.jsoncodec import loads

T = TypeVar("T")


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


def _openings(data: str | bytes) -> int:
    """An upper bound of the JSON's nesting, counted in C: every level opens with a bracket
    (those inside strings only raise the count). Most bodies are far below the limit, and
    their parsed value need not be walked."""
    if isinstance(data, str):
        return data.count("{") + data.count("[")
    return data.count(b"{") + data.count(b"[")


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
    if _openings(data) > MAX_JSON_DEPTH and not _depth_within(value, MAX_JSON_DEPTH):
        raise bad_request(f"The request's JSON nests deeper than {MAX_JSON_DEPTH} levels.")
    return value


@dataclass(frozen=True)
class Endpoint:
    """The ``/graphql`` endpoint's schema and limits, for checks that run before the view's."""

    schema: GraphQLSchema
    limits: QueryLimits
    max_tokens: int
    max_json_bytes: int
    #: Seconds a body may go without a byte while it is read (``GATEWAY_BODY_TIMEOUT_SECONDS``).
    body_timeout: float = 30.0


def body_stalled(seconds: float) -> RequestRefused:
    return RequestRefused(
        408, f"The request body stalled: no byte came for {seconds:g} s. Send the body without pauses."
    )


async def within(seconds: float, read: Awaitable[T]) -> T:
    """``await read``, or :func:`body_stalled` when it brings nothing for ``seconds``: a read of
    a request body waits only as long as its client keeps sending (the gateway answers 408
    and closes the connection, ``gateway/server/aiohttp_internals.py``). Only the time spent
    waiting for the client counts: what the gateway does between two reads does not."""
    try:
        async with asyncio.timeout(seconds):
            return await read
    except TimeoutError:
        raise body_stalled(seconds) from None


async def read_body(content: StreamReader, limit: int, seconds: float) -> bytes:
    """A body of at most ``limit`` bytes, read only while it keeps coming (:func:`within`).
    What has arrived is taken without a wait: a small body comes whole with its head, so
    most requests never arm the deadline (``bench/NOTES.md``, gateway/http/requests.py)."""
    body = bytearray()
    while True:
        piece = content.read_nowait()
        if not piece:
            if content.is_eof():
                break
            piece = await within(seconds, content.readany())
            if not piece:
                break
        body += piece
        if len(body) > limit:
            raise too_large("The request body", limit)
    return bytes(body)


ENDPOINT = web.AppKey("graphql_endpoint", Endpoint)


class BoundedRequestAdapter(AiohttpHTTPRequestAdapter):
    """Reads a JSON body only up to ``Endpoint.max_json_bytes``, and only while it keeps
    coming (``Endpoint.body_timeout`` at most between two pieces)."""

    async def get_body(self) -> bytes:
        endpoint = self.request.app[ENDPOINT]
        limit = endpoint.max_json_bytes
        length = self.request.content_length
        if length is not None and length > limit:
            raise too_large("The request body", limit)
        return await read_body(self.request.content, limit, endpoint.body_timeout)
