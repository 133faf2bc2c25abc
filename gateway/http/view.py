"""The GraphQL-over-HTTP behaviour of the ``/graphql`` view.

Strawberry's aiohttp view answers every result ``application/json`` with status
200 and a ``data`` key, and runs a subscription sent over plain HTTP as if it
were a query. This subclass changes only that: it negotiates the media type
(:mod:`gateway.http.media`), drops ``data`` from request errors and gives them
their status, resolves persisted queries (:mod:`gateway.http.persisted`),
answers subscriptions over HTTP with a ``BAD_REQUEST`` error, and answers a
request refused before GraphQL sees it (malformed JSON or multipart, a body
over its limit, an unsupported content type) as a coded GraphQL error with its
4xx status rather than Strawberry's plain-text body. A request refused whole as
``RATE_LIMITED`` answers 429 with ``Retry-After`` to a client that accepts
``application/graphql-response+json``. GET answers carry the caching headers of
:mod:`gateway.http.caching`, and GraphiQL is served only to a GET that accepts
``text/html`` and names no operation (``fetch``'s ``*/*`` gets JSON).
"""

from __future__ import annotations

from json import JSONDecodeError
from typing import Any, TypeGuard, cast

from aiohttp import hdrs, web
from aiohttp.http_exceptions import HttpProcessingError
from cross_web import AsyncHTTPRequestAdapter, HTTPException
from graphql import GraphQLError
from graphql.execution import ExperimentalIncrementalExecutionResults, InitialIncrementalExecutionResult
from strawberry.aiohttp.views import GraphQLView
from strawberry.exceptions import MissingQueryError
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.http.typevars import Context, RootValue
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from gateway.graph.executor_internals import AnswersByClass, StreamPartsHook
from gateway.http.caching import NO_STORE, VARY, add_vary, cache_get_answer
from gateway.http.incremental import (
    BATCHED,
    DELIVERY,
    IN_A_BATCH,
    NOT_ACCEPTED,
    Delivery,
    abandon,
    incremental_spec,
    measured,
    refusal,
)
from gateway.http.jsoncodec import dumps
from gateway.http.media import (
    GRAPHQL_RESPONSE_JSON,
    accepts_html,
    is_request_error,
    rate_limited_for,
    request_error_status,
    response_media_type,
)
from gateway.http.persisted import PersistedQueries
from gateway.http.requests import RequestRefused, parse_request_json

MEDIA_TYPE = web.ResponseKey("graphql_media_type", str)
#: Whether an answer holds an error (it is then never cached publicly).
HAS_ERRORS = web.ResponseKey("graphql_has_errors", bool)

#: Headers any one of which a multipart request must carry: a browser sends none of them
#: on a cross-site form post, and cannot add one without a CORS preflight (Apollo Server's
#: CSRF prevention; apollo-upload-client sends ``Apollo-Require-Preflight``).
PREFLIGHT_HEADERS = ("GraphQL-Preflight", "Apollo-Require-Preflight", "X-Apollo-Operation-Name")
MULTIPART_WITHOUT_PREFLIGHT = (
    "A multipart request must carry a `GraphQL-Preflight: 1` (or `Apollo-Require-Preflight: true`) "
    "header: without one a cross-site form could post it."
)
COMPRESSED_BODY = (
    "Request bodies are read as sent: `Content-Encoding` {coding!r} is not accepted; send the body "
    "uncompressed."
)
MALFORMED_BODY = "Unable to parse the request body: {detail}"
UNSUPPORTED_CONTENT_TYPE = (
    "Unsupported content type {content_type}: send a JSON body as `application/json`, or an upload "
    "as `multipart/form-data` (the GraphQL multipart request spec); a query may also be sent with GET."
)

SUBSCRIPTION_OVER_HTTP = (
    "Subscriptions are not served over plain HTTP: open a WebSocket on /graphql "
    "with the graphql-transport-ws subprotocol (the graphql-ws library) to subscribe."
)


def subscription_over_http() -> ExecutionResult:
    error = GraphQLError(SUBSCRIPTION_OVER_HTTP, extensions={"code": "BAD_REQUEST"})
    return ExecutionResult(data=None, errors=[error])


#: Responses of any size unless the view is given a limit.
UNLIMITED = 2**63


def too_large(size: int, limit: int) -> dict[str, Any]:
    """The error a response over ``limit`` bytes is replaced with."""
    message = (
        f"The response would be {size} bytes, more than the limit of {limit}: "
        "ask for fewer items or fewer fields per request."
    )
    return {"errors": [{"message": message, "extensions": {"code": "QUERY_TOO_COMPLEX", "limit": limit}}]}


class GraphQLOverHTTPView(AnswersByClass, StreamPartsHook, GraphQLView[Context, RootValue]):
    def __init__(
        self,
        *,
        persisted_queries: PersistedQueries | None = None,
        max_response_bytes: int = UNLIMITED,
        public_max_age: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.persisted_queries = persisted_queries or PersistedQueries()
        self.max_response_bytes = max_response_bytes
        self.public_max_age = public_max_age

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        response: web.StreamResponse
        try:
            _screen(request)
            response = await self.run(request=request)
        except HTTPException as exc:
            response = refused_response(request, exc)
        except HttpProcessingError as exc:
            # A multipart body's part with an oversized or malformed header, read mid-stream.
            detail = (exc.message or "malformed").strip().splitlines()[0][:200]
            response = refused_response(request, RequestRefused(400, MALFORMED_BODY.format(detail=detail)))
        except web.RequestPayloadError as exc:
            # A body whose framing breaks while it is read (a chunk size that is not one).
            cause = exc.__cause__
            detail = cause.message if isinstance(cause, HttpProcessingError) else str(exc)
            detail = (detail or "malformed").strip().splitlines()[0][:200]
            response = refused_response(request, RequestRefused(400, MALFORMED_BODY.format(detail=detail)))
        if isinstance(response, web.WebSocketResponse):  # its whole life is over
            _without_tracebacks(response.exception())
            return response
        if response.prepared:
            return response
        if request.method != "GET":
            response.headers[hdrs.CACHE_CONTROL] = NO_STORE
            return response
        if not isinstance(response, web.Response) or response.content_type == "text/html":
            # GraphiQL: the same URL answers JSON to other Accept headers.
            add_vary(response, VARY)
            return response
        return cache_get_answer(
            request, response, public_max_age=self.public_max_age, errors=response.get(HAS_ERRORS, True)
        )

    def should_render_graphql_ide(self, request: Any) -> bool:
        """GraphiQL for a browser opening the endpoint: a GET that accepts ``text/html`` and names
        no operation (neither a query nor a persisted query's hash); JSON for everything else."""
        if request.method != "GET":
            return False
        params = request.query_params
        if params.get("query") is not None or params.get("extensions") is not None:
            return False
        return accepts_html(request.headers.get("accept"))

    async def parse_http_body(self, request: AsyncHTTPRequestAdapter) -> Any:
        """Strawberry's, with a refusal of an unsupported content type that names the accepted
        ones; a batch is marked on the request (a deferred operation is refused in one)."""
        if request.method == "POST":
            sent = request.headers.get(hdrs.CONTENT_TYPE) or ""
            content_type = sent.split(";", 1)[0].strip().lower()
            if "application/json" not in content_type and not (
                self.multipart_uploads_enabled and content_type == "multipart/form-data"
            ):
                shown = f"`{content_type[:100]}`" if content_type else "(none given)"
                raise RequestRefused(415, UNSUPPORTED_CONTENT_TYPE.format(content_type=shown))
            if "application/json" in content_type and not _may_stream(request.headers.get(hdrs.ACCEPT)):
                return await self._parse_json_post(request)
        data = await super().parse_http_body(request)
        http_request = getattr(request, "request", None)
        if isinstance(data, list) and isinstance(http_request, web.Request):
            http_request[BATCHED] = True
        return data

    async def _parse_json_post(self, request: AsyncHTTPRequestAdapter) -> Any:
        """A JSON POST that asks for no streamed answer, read as Strawberry reads it, without
        its two parses of media types through ``email.message`` (the request's content type
        and its ``Accept``, which a client that may stream names: see :func:`_may_stream`).
        A batch goes on to Strawberry's checks, with the body already read."""
        body = await request.get_body()
        data = self.parse_json(body)
        if not isinstance(data, dict):
            data = await super().parse_http_body(cast(AsyncHTTPRequestAdapter, _BodyRead(request, body)))
            http_request = getattr(request, "request", None)
            if isinstance(data, list) and isinstance(http_request, web.Request):
                http_request[BATCHED] = True
            return data
        query = data.get("query")
        if not isinstance(query, (str, type(None))):
            raise HTTPException(400, "The GraphQL operation's `query` must be a string or null, if provided.")
        variables = data.get("variables")
        if not isinstance(variables, (dict, type(None))):
            raise HTTPException(
                400, "The GraphQL operation's `variables` must be an object or null, if provided."
            )
        extensions = data.get("extensions")
        if not isinstance(extensions, (dict, type(None))):
            raise HTTPException(
                400, "The GraphQL operation's `extensions` must be an object or null, if provided."
            )
        return GraphQLRequestData(
            query=query,
            variables=variables,
            operation_name=data.get("operationName"),
            extensions=extensions,
            protocol="http",
        )

    def is_websocket_request(self, request: web.Request) -> TypeGuard[web.Request]:
        """Strawberry's check, asked twice per request, builds a ``WebSocketResponse``
        and fails its handshake to say no; a request without ``Upgrade: websocket``
        fails that handshake's first test, so it is answered here."""
        if request.headers.get(hdrs.UPGRADE, "").lower().strip() != "websocket":
            return False
        if not request.headers.get(hdrs.SEC_WEBSOCKET_KEY, "").isascii():
            # aiohttp's handshake decodes the key as base64 and fails with a 500 on a key that
            # is not ASCII (it expects only base64's own error); refused as any bad key is.
            raise RequestRefused(400, "Handshake error: Sec-WebSocket-Key is not base64.")
        return super().is_websocket_request(request)

    def parse_json(self, data: str | bytes) -> Any:
        return parse_request_json(data)

    def decode_json(self, data: str | bytes) -> object:
        """WebSocket messages are read as HTTP bodies are (the same depth limit), and must
        have a shape one of the protocols gives a client's message; anything else is a
        message the handler cannot read (``graphql-transport-ws`` closes with 4400, legacy
        ``graphql-ws`` ignores it), never one a handler indexes blindly."""
        try:
            message = parse_request_json(data)
        except HTTPException as exc:
            raise JSONDecodeError(exc.reason, "", 0) from exc
        problem = socket_message_problem(message)
        if problem is not None:
            raise JSONDecodeError(problem, "", 0)
        return message

    def encode_json(self, data: object) -> str:
        """Text (WebSocket frames are sent as text); HTTP responses take the bytes directly.
        A result over the response limit goes out as the error that says so."""
        text = dumps(data)
        if len(text) > self.max_response_bytes and isinstance(data, dict) and "payload" in data:
            text = dumps({**data, "payload": too_large(len(text), self.max_response_bytes)})
        return text.decode()

    async def get_sub_response(self, request: web.Request) -> web.Response:
        response = await super().get_sub_response(request)
        response[MEDIA_TYPE] = response_media_type(request.headers.get("Accept"))
        return response

    async def execute_single(
        self,
        request: web.Request,
        request_adapter: AsyncHTTPRequestAdapter,
        sub_response: web.Response,
        context: Any,
        root_value: Any,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        """Strawberry's ``execute_single``, with persisted queries and no subscriptions over HTTP."""
        query = await self.persisted_queries.document(request_data.query, request_data.extensions)
        if isinstance(query, ExecutionResult):
            return query
        method = request_adapter.method
        allowed = OperationType.from_http(method) - {OperationType.SUBSCRIPTION}
        if not self.allow_queries_via_get and method == "GET":
            allowed -= {OperationType.QUERY}
        try:
            result = await self.schema.execute(
                query,
                root_value=root_value,
                variable_values=request_data.variables,
                context_value=context,
                operation_name=request_data.operation_name,
                allowed_operation_types=allowed,
                operation_extensions=request_data.extensions,
            )
        except InvalidOperationTypeError as exc:
            if exc.operation_type is OperationType.SUBSCRIPTION:
                return subscription_over_http()
            if exc.operation_type is OperationType.MUTATION and method == "GET":
                raise RequestRefused(405, "Mutations are not run over GET; send them with POST.") from exc
            raise HTTPException(400, exc.as_http_error_reason(method)) from exc
        except CannotGetOperationTypeError as exc:
            raise HTTPException(400, exc.as_http_error_reason()) from exc
        except MissingQueryError as exc:
            raise HTTPException(400, "No GraphQL query found in the request") from exc
        if isinstance(result, ExperimentalIncrementalExecutionResults):
            return await self._deliver_incrementally(request, context, result)
        if not is_request_error(result.data, result.errors):
            await self.persisted_queries.remember(
                request_data.query, request_data.extensions, lambda: self.admit_registration(context)
            )
        return result

    async def _deliver_incrementally(
        self, request: web.Request, context: Any, result: ExperimentalIncrementalExecutionResults
    ) -> ExperimentalIncrementalExecutionResults | ExecutionResult:
        """A query with @defer or @stream: its parts as multipart/mixed (gateway/http/incremental.py)."""
        spec = incremental_spec(request.headers.get(hdrs.ACCEPT))
        if spec is None or request.get(BATCHED, False):
            await abandon(result)
            if spec is None:
                raise RequestRefused(406, NOT_ACCEPTED)
            return ExecutionResult(data=None, errors=[refusal(IN_A_BATCH)])
        delivery = Delivery(spec, getattr(context, "request_id", ""), self.max_response_bytes)
        request[DELIVERY] = delivery
        return measured(result, context, delivery)

    async def stream_part(
        self, request: web.Request, value: Any, all_pending: list[Any]
    ) -> tuple[GraphQLHTTPResponse, list[Any]] | None:
        """One part of an incremental response, in the shape the client asked for."""
        delivery = request.get(DELIVERY)
        if delivery is None:  # a stream this view does not deliver: Strawberry's own parts
            return None
        if isinstance(value, InitialIncrementalExecutionResult):
            processed = await self.process_result(request, value)  # type: ignore[arg-type]
            payload = delivery.initial(value, cast(dict[str, Any], processed))
        else:
            payload = delivery.subsequent(value)
        payload = delivery.bounded(payload, len(dumps(payload))) or payload
        return cast(GraphQLHTTPResponse, payload), all_pending

    async def admit_registration(self, context: Any) -> bool:
        """Whether the client of ``context`` may register one more persisted query."""
        return True

    async def process_result(self, request: web.Request, result: ExecutionResult) -> GraphQLHTTPResponse:
        response = await super().process_result(request, result)
        if is_request_error(result.data, result.errors):
            response.pop("data", None)
        return response

    def create_response(
        self,
        response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
        sub_response: web.Response,
    ) -> web.Response:
        response = sub_response
        body = dumps(response_data)
        if len(body) > self.max_response_bytes:
            refusal = too_large(len(body), self.max_response_bytes)
            if isinstance(response_data, dict):
                response_data = cast(GraphQLHTTPResponse, refusal)
                body = dumps(response_data)
            else:
                body = dumps([refusal] * len(response_data))
        response.body = body
        media_type = sub_response.get(MEDIA_TYPE, "application/json")
        # The header as aiohttp's two setters write it, without their parse and rewrite each.
        response.headers[hdrs.CONTENT_TYPE] = f"{media_type}; charset=utf-8"
        answers = response_data if isinstance(response_data, list) else [response_data]
        response[HAS_ERRORS] = any(answer.get("errors") for answer in answers)
        if media_type == GRAPHQL_RESPONSE_JSON and response.status < 400:
            retry_after = rate_limited_for(answers)
            if retry_after is not None:
                response.set_status(429)
                response.headers[hdrs.RETRY_AFTER] = str(retry_after)
            elif isinstance(response_data, dict) and "data" not in response_data:
                codes = [
                    error.get("extensions", {}).get("code")
                    for error in response_data.get("errors") or []
                    if isinstance(error, dict)
                ]
                response.set_status(request_error_status(codes))
        return response


#: Message types that name an operation by its ``id``.
_OPERATION_TYPES = ("subscribe", "complete", "start", "stop")


def _is_text(value: object) -> bool:
    """A string that can be written back (no lone surrogate: a handler that echoes the
    ``type`` in a close reason, or an ``id`` in a message, must be able to encode it)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def socket_message_problem(message: object) -> str | None:
    """What makes ``message`` no client message of ``graphql-transport-ws`` or legacy
    ``graphql-ws``, or None: an object with a ``type`` of text, an ``id`` of text if any
    (and always for the messages of an operation), a ``payload`` that is an object or null
    if any, and for ``subscribe``/``start`` a payload with a string ``query``, object
    ``variables`` and ``extensions`` and a string ``operationName`` where given."""
    if not isinstance(message, dict):
        return "A message is a JSON object."
    if not _is_text(message.get("type")):
        return "A message has a string `type`."
    if ("id" in message or message["type"] in _OPERATION_TYPES) and not _is_text(message.get("id")):
        return "An operation's message has a string `id`."
    payload = message.get("payload")
    if payload is not None and not isinstance(payload, dict):
        return "A message's `payload` is an object."
    if message["type"] in ("subscribe", "start"):
        if payload is None or not isinstance(payload.get("query"), str):
            return "An operation's payload has a string `query`."
        for name, kind in (("variables", dict), ("extensions", dict), ("operationName", str)):
            if payload.get(name) is not None and not isinstance(payload[name], kind):
                return f"An operation's `{name}` is a {'string' if kind is str else 'JSON object'}."
    return None


def _may_stream(accept: str | None) -> bool:
    """Whether an ``Accept`` header names a media type one of Strawberry's streamed answers
    is sent as (``multipart/mixed`` for subscriptions over multipart, ``text/event-stream``);
    only then does the request's protocol need Strawberry's own reading of it."""
    if not accept:
        return False
    lowered = accept.lower()
    return "multipart/mixed" in lowered or "text/event-stream" in lowered


class _BodyRead:
    """A request adapter whose body was read already (a body streams once)."""

    def __init__(self, adapter: AsyncHTTPRequestAdapter, body: bytes) -> None:
        self._adapter = adapter
        self._body = body

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adapter, name)

    async def get_body(self) -> bytes:
        return self._body


def refused_response(request: web.Request, exc: HTTPException) -> web.Response:
    """A request error raised before execution, as ``{"errors": [...]}`` with its status."""
    code = exc.code if isinstance(exc, RequestRefused) else "BAD_REQUEST"
    body = {"errors": [{"message": exc.reason, "extensions": {"code": code}}]}
    headers = {"Allow": "POST"} if exc.status_code == 405 else None
    return web.json_response(
        body,
        status=exc.status_code,
        headers=headers,
        content_type=response_media_type(request.headers.get("Accept")),
    )


def _screen(request: web.Request) -> None:
    """Refuse, before anything is read, a compressed body (aiohttp would inflate it
    without bound: a decompression bomb) and a multipart request no cross-site form
    could be told apart from."""
    coding = request.headers.get(hdrs.CONTENT_ENCODING, "").strip().lower()
    if coding and coding != "identity":
        raise RequestRefused(415, COMPRESSED_BODY.format(coding=coding))
    if request.content_type == "multipart/form-data" and not any(
        request.headers.get(name, "").strip() for name in PREFLIGHT_HEADERS
    ):
        raise RequestRefused(400, MULTIPART_WITHOUT_PREFLIGHT)


def _without_tracebacks(error: BaseException | None) -> None:
    """Drop the tracebacks of ``error`` and of the errors it chains to. A socket that ended
    on an error keeps it (aiohttp's ``exception()``: a reset connection while closing, the
    end of the stream while reading), and its traceback's frames hold the socket: a cycle
    of the socket, its request and its connection's handler, left for a full collection."""
    pending = [error]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        pending += (current.__context__, current.__cause__)
