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


class BrokerUnavailable(GatewayError):
    """The broker that carries live updates between processes is lost: a subscription
    cannot start, or ends. Nothing is lost meanwhile (every event is also stored and can
    be queried); the client resubscribes later."""

    def __init__(self, message: str = "Live updates are unavailable right now; resubscribe later.") -> None:
        super().__init__(message)
