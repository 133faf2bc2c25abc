"""The messenger's input rules; each failure is ``BAD_USER_INPUT`` naming its argument."""

from __future__ import annotations

from gateway.errors import BadUserInput
from gateway.graph import validation

CONTENT_MAX = 4000


def content(value: str) -> str:
    return validation.text(value, "content", max_len=CONTENT_MAX)


def other_login(value: str, viewer: str, field: str) -> str:
    """A well-formed login that is not the viewer's."""
    other = validation.login(value, field)
    if other == viewer:
        raise BadUserInput(field, f"`{field}` must be another user, not yourself.")
    return other
