"""HTTP caching of GraphQL GET answers: a strong ``ETag``, 304s, ``Cache-Control`` and ``Vary``.

A query sent with GET (its text, or a persisted query's hash alone) can be cached by
a browser or a CDN like any other GET:

- every such answer with status 200 carries a strong ``ETag``, a hash of its body,
  and a request whose ``If-None-Match`` names it is answered 304 with no body (the
  query still runs: the tag is the answer's, so only its transfer is saved);
- an anonymous answer (no ``Authorization`` header, no error) is
  ``Cache-Control: public, max-age=<GATEWAY_PUBLIC_MAX_AGE>``: with the default 0 a
  cache keeps it and revalidates it on every use; everything else (an answer for a
  token's user, one with errors, any POST) is ``private, no-store``;
- ``Vary: Accept, Accept-Encoding, Authorization``: the media type, the compression
  and the viewer each change the answer.

The compression middleware gives a compressed body its own tag (``"<tag>-br"``,
``"<tag>-gzip"``, as a strong validator must differ between content codings), and
``If-None-Match`` matches every coding of the current body.
"""

from __future__ import annotations

import hashlib

from aiohttp import hdrs, web

from gateway.http.compression import CODINGS, choose_coding, coded_tag, compresses

VARY = "Accept, Accept-Encoding, Authorization"
NO_STORE = "private, no-store"


def body_tag(body: bytes) -> str:
    """The strong entity tag of ``body`` (quoted)."""
    return f'"{hashlib.blake2b(body, digest_size=16).hexdigest()}"'


def _opaque(tag: str) -> str:
    """A tag as ``If-None-Match`` compares it: weakly (``W/`` dropped), any coding's the same."""
    tag = tag.strip()
    if tag.startswith("W/"):
        tag = tag[2:]
    tag = tag.strip('"')
    for coding in CODINGS:
        if tag.endswith(f"-{coding}"):
            return tag[: -len(coding) - 1]
    return tag


def none_match(if_none_match: str | None, tag: str) -> bool:
    """Whether ``If-None-Match`` names ``tag`` (or ``*``): the client's copy is current."""
    if not if_none_match:
        return False
    current = _opaque(tag)
    return any(
        candidate.strip() == "*" or _opaque(candidate) == current for candidate in if_none_match.split(",")
    )


def add_vary(response: web.StreamResponse, vary: str) -> None:
    """``vary``'s header names added to the response's ``Vary``, each once."""
    present = response.headers.get(hdrs.VARY)
    if not present:
        response.headers[hdrs.VARY] = vary
        return
    names = [name.strip() for name in present.split(",") if name.strip()]
    known = {name.lower() for name in names}
    names += [name.strip() for name in vary.split(",") if name.strip().lower() not in known]
    response.headers[hdrs.VARY] = ", ".join(names)


def cache_get_answer(
    request: web.Request, response: web.Response, *, public_max_age: int, errors: bool
) -> web.Response:
    """Caching headers for the answer to a GraphQL GET, or the 304 that replaces it
    (tagged as the body the compression middleware would have sent)."""

    add_vary(response, VARY)
    body = response.body
    if response.status != 200 or not isinstance(body, bytes):
        response.headers[hdrs.CACHE_CONTROL] = NO_STORE
        return response
    anonymous = hdrs.AUTHORIZATION not in request.headers and not errors
    cache_control = f"public, max-age={public_max_age}" if anonymous else NO_STORE
    tag = body_tag(body)
    response.headers[hdrs.ETAG] = tag
    response.headers[hdrs.CACHE_CONTROL] = cache_control
    if none_match(request.headers.get(hdrs.IF_NONE_MATCH), tag):
        coding = choose_coding(request.headers.get(hdrs.ACCEPT_ENCODING)) if compresses(response) else None
        headers = {
            hdrs.ETAG: tag if coding is None else coded_tag(tag, coding),
            hdrs.CACHE_CONTROL: cache_control,
            hdrs.VARY: response.headers[hdrs.VARY],
        }
        return web.Response(status=304, headers=headers)
    return response
