"""CORS for the routes a browser calls, from ``GATEWAY_CORS_ORIGINS``, with ``aiohttp-cors``.

The WebSocket on ``/graphql`` is admitted by the same list through the view's
``allowed_origins`` (browsers do not apply CORS to WebSocket handshakes, so the
view checks ``Origin`` itself). Bearer tokens travel in the ``Authorization``
header, which CORS treats as an ordinary request header; credentials (cookies)
are allowed for listed origins and never for ``*``.
"""

from __future__ import annotations

import aiohttp_cors
from aiohttp import hdrs, web

from gateway.settings.values import ANY_ORIGIN, normalized_origins

#: Response headers a cross-origin page may read besides the CORS-safelisted ones: the
#: download headers a player or a resumable download needs (``Content-Range`` to place a
#: 206's bytes, ``Accept-Ranges`` to know it may ask for ranges, ``ETag`` for ``If-Range``
#: and ``If-None-Match``), ``Retry-After`` of rate-limited answers, and ``X-Request-Id``,
#: which names the request in the server's logs.
EXPOSED_HEADERS = (
    "Accept-Ranges",
    "Content-Disposition",
    "Content-Length",
    "Content-Range",
    "ETag",
    "Retry-After",
    "X-Request-Id",
)

#: Seconds a browser may cache a preflight answer.
PREFLIGHT_MAX_AGE = 600


def install_cors(app: web.Application, origins: tuple[str, ...]) -> None:
    """Answer preflights and add CORS headers on every route but static files.

    Call after every route is added. Nothing is installed without origins, so
    preflights get 405 and responses carry no CORS headers: same-origin only.
    """
    if not origins:
        return
    allowed = normalized_origins(origins)
    options = aiohttp_cors.ResourceOptions(  # type: ignore[no-untyped-call]  # aiohttp-cors 0.8.1: untyped
        allow_credentials=ANY_ORIGIN not in allowed,
        expose_headers=EXPOSED_HEADERS,
        allow_headers="*",
        allow_methods=["GET", "POST"],
        max_age=PREFLIGHT_MAX_AGE,
    )
    cors = aiohttp_cors.setup(app, defaults={origin: options for origin in allowed})
    for route in list(app.router.routes()):
        if not isinstance(route.resource, web.StaticResource):
            cors.add(route)
    app.on_response_prepare.append(_vary_on_origin)


async def _vary_on_origin(_: web.Request, response: web.StreamResponse) -> None:
    """Caches must not serve an answer allowed for one origin to another."""
    if hdrs.ACCESS_CONTROL_ALLOW_ORIGIN in response.headers:
        vary = response.headers.get(hdrs.VARY)
        response.headers[hdrs.VARY] = f"{vary}, Origin" if vary else "Origin"
