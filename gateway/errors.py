"""The errors of the domain layer: what went wrong, in the API's words, without GraphQL.

Stores, rules and services raise these; ``gateway/graph/errors.py`` gives each
class its ``extensions.code`` when it reaches a client. ``field`` names the
argument or input field the error is about, when there is one.
"""

from __future__ import annotations

import math


class GatewayError(Exception):
    """An error whose message is meant for the client, unchanged."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class BadUserInput(GatewayError):
    """An argument that does not pass its rules."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)


class Unauthenticated(GatewayError):
    def __init__(self, message: str = "You must be signed in.") -> None:
        super().__init__(message)


class Forbidden(GatewayError):
    pass


class NotFound(GatewayError):
    pass


class Conflict(GatewayError):
    pass


class BrokerUnavailable(GatewayError):
    """The broker that carries live updates between processes is lost: a subscription
    cannot start, or ends. Nothing is lost meanwhile (every event is also stored and can
    be queried); the client resubscribes later."""

    def __init__(self, message: str = "Live updates are unavailable right now; resubscribe later.") -> None:
        super().__init__(message)


class RateLimited(GatewayError):
    """Too many attempts: the client may try again in ``retry_after`` whole seconds (at least 1)."""

    def __init__(self, retry_after: float, message: str | None = None, *, field: str | None = None) -> None:
        self.retry_after = max(1, math.ceil(retry_after))
        super().__init__(message or f"Too many attempts; try again in {self.retry_after} s.", field=field)


class Unavailable(GatewayError):
    """A service the operation depends on cannot answer right now.

    ``retry_safe`` tells the client whether sending the same request again is harmless.
    """

    def __init__(self, message: str, *, retry_safe: bool) -> None:
        super().__init__(message)
        self.retry_safe = retry_safe
