"""Compression of responses over 1 KiB: brotli or gzip, as the request accepts.

Only whole bodies built in memory (GraphQL results, JSON, HTML) are compressed.
Streamed responses are left alone, which covers attachment downloads on
purpose: many attachments are compressed already (images, archives, PDFs),
compressing a stream would drop its ``Content-Length``, and byte ranges must
refer to the stored bytes. WebSocket messages are not touched either. A body
compressed here is another representation, so its strong ``ETag`` gets the
coding's suffix (``"<tag>-br"``; :mod:`gateway.http.caching` matches every coding).
"""

from __future__ import annotations

import asyncio

import brotli
from aiohttp import hdrs, web
from aiohttp.typedefs import Handler
from aiohttp.web_response import ContentCoding

#: Bodies up to this size go out as they are: below it, compressing saves less than it costs.
MIN_SIZE = 1024

#: brotli quality for responses built per request: close to 5's size for much less CPU (bench/NOTES.md).
BROTLI_QUALITY = 4

#: Bodies larger than this are brotli-compressed off the event loop.
BROTLI_INLINE_LIMIT = 256 * 1024

COMPRESSIBLE_TYPES = frozenset(
    {
        "application/json",
        "application/graphql-response+json",
        "application/javascript",
        "application/xml",
        "image/svg+xml",
    }
)


#: The content codings a body may be sent with; each gives the body a tag of its own.
CODINGS = ("br", "gzip")


def coded_tag(tag: str, coding: str) -> str:
    """The entity tag ``tag`` of a body sent with content coding ``coding`` (``"<tag>-br"``);
    a weak tag stays as it is."""
    if tag.startswith('"') and tag.endswith('"') and len(tag) > 1:
        return f'"{tag[1:-1]}-{coding}"'
    return tag


def _compressible(content_type: str) -> bool:
    return content_type.startswith("text/") or content_type in COMPRESSIBLE_TYPES


def accepted_codings(accept_encoding: str) -> dict[str, float]:
    """Content coding → quality, per RFC 9110 (``*`` stands for codings not named)."""
    codings: dict[str, float] = {}
    for part in accept_encoding.split(","):
        coding, *params = part.split(";")
        coding = coding.strip().lower()
        if not coding:
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        codings[coding] = quality
    return codings


def choose_coding(accept_encoding: str | None) -> str | None:
    """``br``, ``gzip`` or ``None`` (identity); brotli wins a tie, it is smaller."""
    if not accept_encoding:
        return None
    codings = accepted_codings(accept_encoding)
    anything = codings.get("*", 0.0)
    best: tuple[float, str] | None = None
    for coding in ("br", "gzip"):
        quality = codings.get(coding, anything)
        if quality > 0.0 and (best is None or quality > best[0]):
            best = (quality, coding)
    return best[1] if best else None


def _vary_on_accept_encoding(response: web.StreamResponse) -> None:
    vary = response.headers.get(hdrs.VARY)
    if vary is None:
        response.headers[hdrs.VARY] = hdrs.ACCEPT_ENCODING
    elif hdrs.ACCEPT_ENCODING.lower() not in vary.lower():
        response.headers[hdrs.VARY] = f"{vary}, {hdrs.ACCEPT_ENCODING}"


def compresses(response: web.StreamResponse) -> bool:
    """Whether the middleware compresses ``response`` for a request that accepts it."""
    return (
        isinstance(response, web.Response)
        and not response.prepared
        and hdrs.CONTENT_ENCODING not in response.headers
        and isinstance(response.body, bytes)
        and len(response.body) > MIN_SIZE
        and _compressible(response.content_type)
    )


@web.middleware
async def compress_responses(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    if not compresses(response):
        return response
    assert isinstance(response, web.Response)
    _vary_on_accept_encoding(response)
    coding = choose_coding(request.headers.get(hdrs.ACCEPT_ENCODING))
    tag = response.headers.get(hdrs.ETAG)
    if coding is not None and tag is not None:
        # A strong tag names one representation: the compressed body is another.
        response.headers[hdrs.ETAG] = coded_tag(tag, coding)
    if coding == "gzip":
        response.enable_compression(ContentCoding.gzip)
    elif coding == "br":
        body = response.body
        assert isinstance(body, bytes)
        if len(body) > BROTLI_INLINE_LIMIT:
            response.body = await asyncio.to_thread(brotli.compress, body, quality=BROTLI_QUALITY)
        else:
            response.body = brotli.compress(body, quality=BROTLI_QUALITY)
        response.headers[hdrs.CONTENT_ENCODING] = "br"
    return response
