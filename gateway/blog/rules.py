"""The blog's input rules; every failure is ``BAD_USER_INPUT`` naming its field."""

from __future__ import annotations

import re

from gateway.errors import BadUserInput
from gateway.graph import validation

SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SLUG_MAX = 100
TAG = re.compile(r"[a-z0-9-]{1,30}")
TAGS_MAX = 10
TITLE_MAX = 200
BODY_MAX = 100_000
NAME_MAX = 100
COMMENT_MAX = 4000


def is_slug(value: str) -> bool:
    return len(value) <= SLUG_MAX and SLUG.fullmatch(value) is not None


def slug(value: str, field: str = "slug") -> str:
    """Lower-case words of letters and digits joined by single hyphens, at most 100 characters."""
    if not is_slug(value):
        raise BadUserInput(
            field,
            f"`{field}` must be at most {SLUG_MAX} characters of lower-case letters and digits, "
            "in words joined by single hyphens (e.g. 'my-first-post').",
        )
    return value


def title(value: str) -> str:
    return validation.text(value, "title", max_len=TITLE_MAX)


def body(value: str) -> str:
    """Kept as written (leading and trailing whitespace can be markup); may be empty."""
    return validation.text(value, "body", min_len=0, max_len=BODY_MAX, trim=False)


def tag(value: str, field: str = "tag") -> str:
    """A tag as stored: trimmed, lower-case, 1-30 of ``[a-z0-9-]``."""
    result = value.strip().lower()
    if not TAG.fullmatch(result):
        raise BadUserInput(field, f"`{field}` must be 1-30 letters, digits or hyphens.")
    return result


def tags(values: list[str]) -> list[str]:
    """At most 10 tags, stored lower-case, duplicates dropped, first spelling's order kept."""
    if len(values) > TAGS_MAX:
        raise BadUserInput("tags", f"A post may have at most {TAGS_MAX} tags.")
    return list(dict.fromkeys(tag(value, "tags") for value in values))


def commenter_name(value: str) -> str:
    return validation.text(value, "name", max_len=NAME_MAX)


def commenter_email(value: str) -> str:
    return validation.email(value, "email")


def comment_text(value: str) -> str:
    return validation.text(value, "text", max_len=COMMENT_MAX)
