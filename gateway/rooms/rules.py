"""What a room's arguments must look like; every failure names its field."""

from __future__ import annotations

import re

from gateway.graph import validation

ROOM_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{2,30}")
BANNER_MAX = 200
CONTENT_MAX = 4000


def room_name(value: str, field: str = "name") -> str:
    """3-31 characters: a letter or digit, then letters, digits, '_', '.' or '-'.
    Names are case-sensitive and taken as given (no trimming: a name with spaces
    is rejected rather than silently changed)."""
    return validation.pattern(
        value,
        field,
        ROOM_NAME,
        "must be 3-31 characters: a letter or digit, then letters, digits, '_', '.' or '-'.",
    )


def banner(value: str | None) -> str | None:
    """Up to 200 characters after trimming; empty means no banner."""
    return validation.optional_text(value, "banner", max_len=BANNER_MAX) or None


def content(value: str) -> str:
    """1-4000 characters after trimming."""
    return validation.text(value, "content", max_len=CONTENT_MAX)
