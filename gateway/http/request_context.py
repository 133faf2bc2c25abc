"""Every HTTP request's id and trace context, and its span when tracing is on.

:func:`request_context` is the application's outermost middleware. It takes the
request's ``X-Request-Id`` (or makes one, :mod:`gateway.tracing`) and its W3C
``traceparent`` for the rest of the request: the GraphQL context, error messages and
every log line use the id, and :func:`echo_request_id` writes it on every response
(errors, 304s, downloads and WebSocket upgrades included), as the response is prepared.

With tracing on, the request is a server span named ``<method> <route>``, the child of
the caller's span when ``traceparent`` names one. A WebSocket upgrade gets no span: its
handler lasts as long as the socket; each of its operations is a span of its own.
"""

from __future__ import annotations

from aiohttp import hdrs, web
from aiohttp.typedefs import Handler, Middleware
from opentelemetry.trace import Status, StatusCode

from gateway.tracing import (
    REQUEST_ID_HEADER,
    TRACEPARENT_HEADER,
    SpanKind,
    Tracer,
    begin_request,
    remote_context,
)

REQUEST_ID = web.RequestKey("request_id", str)


def request_context(tracer: Tracer | None) -> Middleware:
    """The middleware; ``tracer`` None: no spans."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        headers = request.headers
        request[REQUEST_ID] = begin_request(headers.get(REQUEST_ID_HEADER), headers.get(TRACEPARENT_HEADER))
        if tracer is None or headers.get(hdrs.UPGRADE, "").lower() == "websocket":
            return await handler(request)
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else None
        attributes = {
            "http.request.method": request.method,
            "url.path": request.path,
            "gateway.request_id": request[REQUEST_ID],
        }
        if route is not None:
            attributes["http.route"] = route
        name = f"{request.method} {route}" if route is not None else request.method
        with tracer.start_as_current_span(
            name,
            context=remote_context(headers),
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            status = 500
            try:
                response = await handler(request)
                status = response.status
                return response
            except web.HTTPException as exc:
                status = exc.status
                raise
            except BaseException as exc:
                span.record_exception(exc)
                raise
            finally:
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))

    return middleware


async def echo_request_id(request: web.Request, response: web.StreamResponse) -> None:
    """``X-Request-Id`` on every response (an ``on_response_prepare`` signal handler)."""
    request_id = request.get(REQUEST_ID)
    if request_id is not None:
        response.headers[REQUEST_ID_HEADER] = request_id


def install(app: web.Application, tracer: Tracer | None) -> None:
    """Make the middleware the application's outermost, and echo the id on every response."""
    app.middlewares.insert(0, request_context(tracer))
    app.on_response_prepare.append(echo_request_id)
