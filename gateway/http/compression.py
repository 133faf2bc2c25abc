"""Compression of responses over 1 KiB: brotli or gzip, as the request accepts.

Only whole bodies built in memory (GraphQL results, JSON, HTML) are compressed.
Streamed responses are left alone, which covers attachment downloads on
purpose: many attachments are compressed already (images, archives, PDFs),
compressing a stream would drop its ``Content-Length``, and byte ranges must
refer to the stored bytes. WebSocket messages are not touched either.
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


@web.middleware
async def compress_responses(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    if (
        not isinstance(response, web.Response)
        or response.prepared
        or hdrs.CONTENT_ENCODING in response.headers
        or not isinstance(response.body, bytes)
        or len(response.body) <= MIN_SIZE
        or not _compressible(response.content_type)
    ):
        return response
    _vary_on_accept_encoding(response)
    coding = choose_coding(request.headers.get(hdrs.ACCEPT_ENCODING))
    if coding == "gzip":
        response.enable_compression(ContentCoding.gzip)
    elif coding == "br":
        body = response.body
        if len(body) > BROTLI_INLINE_LIMIT:
            response.body = await asyncio.to_thread(brotli.compress, body, quality=BROTLI_QUALITY)
        else:
            response.body = brotli.compress(body, quality=BROTLI_QUALITY)
        response.headers[hdrs.CONTENT_ENCODING] = "br"
    return response
