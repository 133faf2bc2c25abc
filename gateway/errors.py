"""The errors of the domain layer: what went wrong, in the API's words, without GraphQL.

Stores, rules and services raise these; ``gateway/graph/errors.py`` gives each
class its ``extensions.code`` when it reaches a client. ``field`` names the
argument or input field the error is about, when there is one.
"""

from __future__ import annotations


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


class RateLimited(GatewayError):
    """Too many attempts; ``retry_after`` is how many seconds the client should wait."""

    def __init__(self, message: str, *, retry_after: float, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.retry_after = retry_after


class Unavailable(GatewayError):
    """A service the operation depends on cannot answer right now.

    ``retry_safe`` tells the client whether sending the same request again is harmless.
    """

    def __init__(self, message: str, *, retry_safe: bool) -> None:
        super().__init__(message)
        self.retry_safe = retry_safe
