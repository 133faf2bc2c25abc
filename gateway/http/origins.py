"""The origins of ``GATEWAY_CORS_ORIGINS``, checked and written as browsers send them."""

from __future__ import annotations

from collections.abc import Iterable

from strawberry.http.websocket_origin import normalize_allowed_origins

ANY_ORIGIN = "*"


def normalized_origins(origins: Iterable[str]) -> frozenset[str]:
    """``https://Example.com:443`` becomes ``https://example.com``; raises ``ValueError`` on a non-origin."""
    return normalize_allowed_origins(tuple(origins))


def cors_problems(origins: tuple[str, ...]) -> list[str]:
    if ANY_ORIGIN in origins and len(origins) > 1:
        return ["GATEWAY_CORS_ORIGINS: '*' (any origin) must be the only entry"]
    try:
        normalized_origins(origins)
    except ValueError as exc:
        return [f"GATEWAY_CORS_ORIGINS: {exc}"]
    return []
