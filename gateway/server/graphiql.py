"""Offline GraphiQL playground.

Strawberry's bundled GraphiQL page loads React, GraphiQL, the explorer plugin and
js-cookie from unpkg.com, so it stays blank in a browser without internet
access.  This module serves the same page with every unpkg URL rewritten to
local copies in ``gateway/server/static/graphiql/`` (see ``SOURCES.txt`` there).
The page opens on :data:`EXAMPLE`, operations to run in turn (sign in, then a query
with the token as the ``Authorization`` header), instead of GraphiQL's welcome text.

The page is read from the installed Strawberry package, not copied, so a
Strawberry upgrade keeps its page logic; only the asset files may need
refreshing when Strawberry pins new versions (``graphiql_html()`` raises if a
referenced file is missing).

Wiring (aiohttp)::

    from strawberry.aiohttp.views import GraphQLView
    from gateway.server.graphiql import add_static_routes, render_graphiql

    class GatewayGraphQLView(GraphQLView):
        async def render_graphql_ide(self, request: web.Request) -> web.Response:
            return await render_graphiql(request)

    app.router.add_route("*", "/graphql", GatewayGraphQLView(schema=schema))
    add_static_routes(app)
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from importlib import resources
from pathlib import Path

from aiohttp import web

__all__ = [
    "STATIC_DIR",
    "STATIC_PREFIX",
    "add_static_routes",
    "graphiql_headers",
    "graphiql_html",
    "render_graphiql",
]

STATIC_DIR: Path = Path(__file__).resolve().parent / "static" / "graphiql"
STATIC_PREFIX = "/graphql/static/"

# Asset URLs carry ``?v=<content hash>``, so a long immutable cache is safe.
_CACHE_CONTROL = "public, max-age=31536000, immutable"

_UNPKG_URL = re.compile(r"https://unpkg\.com/[^\"'\s>]+")
_TAG = re.compile(r"<(?:script|link)\b[^>]*>", re.IGNORECASE)
# SRI + CORS attributes: pointless for same-origin files, and a stale hash
# would make the browser refuse the local file.
_SRI_ATTRS = re.compile(
    r"\s+(?:integrity|crossorigin)(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?"
    r"(?=[\s/>])",
    re.IGNORECASE,
)
# Older Strawberry releases templated the page; the view substituted these.
_LEGACY_VARS = {"{{ SUBSCRIPTION_ENABLED }}": "true"}
_LEFTOVER_VAR = re.compile(r"\{\{\s*[A-Z_]+\s*\}\}")
#: The editor's first text in Strawberry's page (a JavaScript template literal).
_EXAMPLE_QUERY = re.compile(r"const EXAMPLE_QUERY = `[^`]*`;")

#: What the query editor opens with (unless the page's URL carries a query).
EXAMPLE = """\
# This gateway's API. Run the operations below in turn: put the cursor in one
# and press Ctrl-Enter (or press the run button and pick it by name).
#
# 1. SignIn answers a bearer token. The demo users (alice, bob, carol, dave,
#    erin) exist once the gateway ran with --seed (scripts/run does);
#    signUp makes an account of your own.
# 2. Open "Headers" below this editor and give the token to every request:
#      {"Authorization": "Bearer <the token SignIn answered>"}
# 3. Me then runs as that user. Subscriptions (messageReceived, typing, ...)
#    run over a WebSocket that carries the same header.
#
# The book icon on the left opens the documentation of every type and field.

mutation SignIn {
  signIn(login: "alice", password: "demo-password") {
    token
    expiresAt
    user { login firstname }
  }
}

query Me {
  me {
    user { login firstname lastname }
    talkPartners(first: 5) {
      nodes { partner { login } lastMessage unreadCount }
    }
  }
}
"""
#: Every script element: its attributes and its body.
_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.DOTALL | re.IGNORECASE)

#: Sent with every static asset: a browser takes each for its declared type only.
NOSNIFF = {"X-Content-Type-Options": "nosniff"}


def _strawberry_page() -> str:
    page = resources.files("strawberry").joinpath("static", "graphiql.html")
    return page.read_text(encoding="utf-8")


def _local_url(match: re.Match[str]) -> str:
    filename = match.group(0).split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    path = STATIC_DIR / filename
    if not path.is_file():
        msg = (
            f"GraphiQL asset {match.group(0)!r} has no local copy at {path}; "
            "refresh gateway/server/static/graphiql/ (see SOURCES.txt there)."
        )
        raise RuntimeError(msg)
    version = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return f"{STATIC_PREFIX}{filename}?v={version}"


def _js_template(text: str) -> str:
    """``text`` as a JavaScript template literal."""
    escaped = text.replace("\\", "\\\\").replace("`", "\\`").replace("${", "\\${")
    return f"`{escaped}`"


def _strip_sri(tag: re.Match[str]) -> str:
    return _SRI_ATTRS.sub("", tag.group(0))


@functools.cache
def graphiql_html() -> str:
    """Strawberry's GraphiQL page, rewritten to load its assets locally.

    Computed once per process.  Raises ``RuntimeError`` if the page references
    an asset missing from ``STATIC_DIR`` or keeps an unsubstituted template
    variable, rather than serving a page that silently stays blank.
    """
    html = _strawberry_page()
    for variable, value in _LEGACY_VARS.items():
        html = html.replace(variable, value)
    if leftover := _LEFTOVER_VAR.search(html):
        msg = f"Unhandled template variable {leftover.group(0)!r} in GraphiQL page"
        raise RuntimeError(msg)

    html, replaced = _EXAMPLE_QUERY.subn(lambda _: f"const EXAMPLE_QUERY = {_js_template(EXAMPLE)};", html)
    if replaced != 1:
        msg = "GraphiQL page has no EXAMPLE_QUERY to replace with the gateway's example"
        raise RuntimeError(msg)

    html = _UNPKG_URL.sub(_local_url, html)
    html = _TAG.sub(_strip_sri, html)
    if "unpkg.com" in html:
        msg = "GraphiQL page still references unpkg.com after rewriting"
        raise RuntimeError(msg)
    return html


@functools.cache
def graphiql_headers() -> dict[str, str]:
    """The page's security headers: a Content-Security-Policy that lets it load only its own
    origin's scripts, styles and fonts and run only its own inline scripts (by their SHA-256,
    so no injected script runs), talk only to its own origin (HTTP and the WebSocket), and be
    framed by nobody (no clickjacking); ``nosniff``; no referrer leaves it.

    Styles keep ``'unsafe-inline'``: GraphiQL and CodeMirror set style attributes as they
    render, and a style cannot run code. Raises ``RuntimeError`` when the page holds a script
    this function cannot hash (one with attributes and a body), rather than serving a page
    the policy would silently break."""
    html = graphiql_html()
    scripts = _SCRIPT.findall(html)
    inline = [body for attributes, body in scripts if body.strip()]
    if len(scripts) != html.lower().count("<script") or any(
        attributes.strip() for attributes, body in scripts if body.strip()
    ):
        raise RuntimeError("GraphiQL page has a script the Content-Security-Policy cannot account for")
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()}'" for body in inline
    )
    policy = "; ".join(
        (
            "default-src 'none'",
            f"script-src 'self' {hashes}",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "object-src 'none'",
            "frame-ancestors 'none'",
        )
    )
    return {
        "Content-Security-Policy": policy,
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        **NOSNIFF,
    }


async def render_graphiql(request: web.Request) -> web.Response:
    """Serve the offline GraphiQL page.

    Use it as the body of ``GraphQLView.render_graphql_ide``::

        class GatewayGraphQLView(strawberry.aiohttp.views.GraphQLView):
            async def render_graphql_ide(self, request):
                return await render_graphiql(request)

    Subscriptions work as in Strawberry's page: it derives the ``ws(s)://``
    URL from the page location, i.e. the GraphQL endpoint itself.
    """
    return web.Response(text=graphiql_html(), content_type="text/html", headers=graphiql_headers())


async def _cache_static(request: web.Request, response: web.StreamResponse) -> None:
    if request.path.startswith(STATIC_PREFIX):
        response.headers.update(NOSNIFF)
        if response.status in (200, 304):
            response.headers["Cache-Control"] = _CACHE_CONTROL


def add_static_routes(app: web.Application) -> None:
    """Serve ``STATIC_DIR`` under ``STATIC_PREFIX`` (call before app startup).

    aiohttp's static handler already answers conditional requests
    (ETag/Last-Modified -> 304); a long ``Cache-Control`` is added since the
    page links the assets with a content-hash query string.
    """
    app.router.add_static(
        STATIC_PREFIX,
        STATIC_DIR,
        name="graphiql-static",
        show_index=False,
        follow_symlinks=False,
    )
    app.on_response_prepare.append(_cache_static)
