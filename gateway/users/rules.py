"""Input rules for accounts and profiles; each failure is ``BAD_USER_INPUT`` naming its field."""

from __future__ import annotations

from gateway.errors import BadUserInput
from gateway.graph import validation

NAME_MAX = 100
BIO_MAX = 2000
PASSWORD_MIN = 8
PASSWORD_MAX = 128
NAMES = ("firstname", "lastname")


def login_or_none(value: str) -> str | None:
    """The login to look a user up by; None for one no user can have."""
    try:
        return validation.login(value)
    except BadUserInput:
        return None


def name(value: str, field: str) -> str:
    return validation.text(value, field, max_len=NAME_MAX)


def bio(value: str | None) -> str:
    return validation.optional_text(value, "bio", max_len=BIO_MAX) or ""


def password(value: str) -> str:
    validation.unicode_text(value, "password")
    if len(value) < PASSWORD_MIN:
        raise BadUserInput("password", f"`password` must be at least {PASSWORD_MIN} characters.")
    if len(value) > PASSWORD_MAX:
        raise BadUserInput("password", f"`password` must be at most {PASSWORD_MAX} characters.")
    return value


def not_null(value: str | None, field: str) -> str:
    """A profile field given as null, which only ``bio`` may be."""
    if value is None:
        raise BadUserInput(field, f"`{field}` cannot be null.")
    return value
