"""Response media types of the GraphQL-over-HTTP spec, and the status of request errors.

A client that accepts ``application/graphql-response+json`` gets it, and with it
the status codes the spec ties to that type: a *request error* (the document
does not parse or validate, variables do not coerce, the operation may not run
over HTTP) answers 4xx with no ``data`` key. ``application/json`` stays the
default for clients that send no ``Accept``, ``*/*`` or only ``application/json``;
they get 200 for request errors, also without ``data``. A request refused whole as
``RATE_LIMITED`` answers 429 to the former (with ``Retry-After``), 200 to the latter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphql import GraphQLError

GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"
JSON = "application/json"
RATE_LIMITED = "RATE_LIMITED"

#: HTTP status of a request error, by ``extensions.code``; any other code is 400.
_SERVER_FAULTS = {"INTERNAL_SERVER_ERROR": 500, "UNAVAILABLE": 503}


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value.strip())
            except ValueError:
                return 0.0
    return 1.0


def _accepted(accept: str) -> dict[str, float]:
    """Media range → quality, for each range of an ``Accept`` header."""
    ranges: dict[str, float] = {}
    for part in accept.split(","):
        media_range, *params = part.split(";")
        media_range = media_range.strip().lower()
        if media_range:
            ranges[media_range] = max(ranges.get(media_range, 0.0), _quality(params))
    return ranges


def response_media_type(accept: str | None) -> str:
    """The type to answer with: ``application/graphql-response+json`` only when asked for by name.

    It must be listed explicitly and rank at least as high as ``application/json``
    (or ``application/*``, ``*/*``); wildcards alone keep the legacy type, which
    every client understands.
    """
    if not accept:
        return JSON
    ranges = _accepted(accept)
    wanted = ranges.get(GRAPHQL_RESPONSE_JSON, 0.0)
    if wanted <= 0.0:
        return JSON
    legacy = ranges.get(JSON, ranges.get("application/*", ranges.get("*/*", 0.0)))
    return GRAPHQL_RESPONSE_JSON if wanted >= legacy else JSON


def accepts_html(accept: str | None) -> bool:
    """Whether ``Accept`` names ``text/html`` (as a browser navigating does; ``*/*`` alone,
    what ``fetch`` sends, does not count)."""
    return bool(accept) and _accepted(accept or "").get("text/html", 0.0) > 0.0


def rate_limited_for(answers: Sequence[Mapping[str, Any]]) -> int | None:
    """The seconds to wait when every answer of a request was refused whole as ``RATE_LIMITED``
    (no data, every error that code; the longest ``retryAfter``), else None."""
    waits: list[int] = []
    for answer in answers:
        errors = answer.get("errors")
        if answer.get("data") is not None or not errors:
            return None
        for error in errors:
            extensions = error.get("extensions") if isinstance(error, dict) else None
            if not isinstance(extensions, dict) or extensions.get("code") != RATE_LIMITED:
                return None
            wait = extensions.get("retryAfter")
            waits.append(wait if isinstance(wait, int) and wait > 0 else 1)
    return max(waits) if waits else None


def is_request_error(data: object, errors: Sequence[GraphQLError] | None) -> bool:
    """Whether a result failed before execution began.

    Execution errors always carry the ``path`` of the field that failed (even
    when they null the whole ``data``); errors of parsing, validation and
    variable coercion never do.
    """
    return data is None and bool(errors) and all(error.path is None for error in errors or ())


def request_error_status(codes: Sequence[object]) -> int:
    """The 4xx or 5xx status of a request error answered as ``application/graphql-response+json``."""
    return max((_SERVER_FAULTS.get(str(code), 400) for code in codes), default=400)
