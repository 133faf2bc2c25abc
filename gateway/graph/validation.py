"""Input validation shared by the domains; every failure names its field."""

from __future__ import annotations

import re

from gateway.errors import BadUserInput

LOGIN = re.compile(r"^[a-z0-9][a-z0-9_.-]{2,29}$")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
EMAIL = re.compile(rf"^[^@\s]{{1,64}}@{_LABEL}(?:\.{_LABEL})+$")


def unicode_text(value: str, field: str) -> str:
    """``value`` when it is Unicode text: a lone surrogate (``"\\ud800"``, which JSON can
    spell) cannot be stored, and would fail in the driver after earlier writes."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        message = f"`{field}` is not valid Unicode text (it holds a lone surrogate)."
        raise BadUserInput(field, message) from None
    return value


def text(value: str, field: str, *, min_len: int = 1, max_len: int, trim: bool = True) -> str:
    """``value`` trimmed, between ``min_len`` and ``max_len`` characters, Unicode text."""
    result = unicode_text(value.strip() if trim else value, field)
    if len(result) < min_len:
        raise BadUserInput(
            field,
            f"`{field}` must not be empty."
            if min_len == 1
            else f"`{field}` must be at least {min_len} characters.",
        )
    if len(result) > max_len:
        raise BadUserInput(field, f"`{field}` must be at most {max_len} characters.")
    return result


#: Longest idempotency key (``clientMutationId``) accepted; a UUID is 36 characters.
IDEMPOTENCY_KEY_MAX = 100


def idempotency_key(value: str | None, field: str = "clientMutationId") -> str | None:
    """A client-generated idempotency key, taken as sent (never trimmed), or None."""
    if value is None:
        return None
    return text(value, field, max_len=IDEMPOTENCY_KEY_MAX, trim=False)


def optional_text(value: str | None, field: str, *, max_len: int) -> str | None:
    if value is None:
        return None
    return text(value, field, min_len=0, max_len=max_len)


def login(value: str, field: str = "login") -> str:
    """Logins are 3-30 characters ``[a-z0-9][a-z0-9_.-]*``, stored lower-case."""
    result = value.strip().lower()
    if not LOGIN.fullmatch(result):
        raise BadUserInput(
            field,
            f"`{field}` must be 3-30 characters: a letter or digit, then letters, digits, '_', '.' or '-'.",
        )
    return result


def email(value: str, field: str = "email") -> str:
    result = unicode_text(value.strip(), field)
    if len(result) > 254 or not EMAIL.fullmatch(result):
        raise BadUserInput(field, f"`{field}` must be a valid email address.")
    return result


def pattern(value: str, field: str, regex: re.Pattern[str], description: str) -> str:
    if not regex.fullmatch(unicode_text(value, field)):
        raise BadUserInput(field, f"`{field}` {description}")
    return value
