"""Mail's input rules: labels, colours, email ids, recipients and attachments.

Each failure is ``BAD_USER_INPUT`` naming the argument or input field.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

from gateway.errors import BadUserInput
from gateway.graph import validation
from gateway.mail.records import DEFAULT_COLOR
from gateway.mail.uploads import MAX_FILES, RefusedUpload, StoredUpload

LABEL = re.compile(r"[a-z0-9][a-z0-9_-]{0,29}")
COLOR = re.compile(r"#[0-9a-f]{6}")
MAX_RECIPIENTS = 100
SUBJECT_MAX = 200
BODY_MAX = 100_000


def label(value: str, field: str) -> str:
    return validation.pattern(
        value.strip().lower(),
        field,
        LABEL,
        "must be 1-30 characters: a letter or digit, then letters, digits, '_' or '-'.",
    )


def label_or_none(value: str) -> str | None:
    """The label to look a folder up by; None for one no folder can have."""
    key = value.strip().lower()
    return key if LABEL.fullmatch(key) else None


def color(value: str | None) -> str:
    if value is None:
        return DEFAULT_COLOR
    return validation.pattern(value.strip().lower(), "color", COLOR, "must be a colour like #1a73e8.")


def email_id_or_none(value: str) -> UUID | None:
    """A time-based UUID, or None for anything else."""
    try:
        parsed = UUID(value.strip())
    except (ValueError, AttributeError):
        return None
    return parsed if parsed.version == 1 else None


def email_id(value: str) -> UUID:
    key = email_id_or_none(value)
    if key is None:
        raise BadUserInput("id", "`id` must be an email id.")
    return key


def subject(value: str) -> str:
    return validation.text(value, "subject", min_len=0, max_len=SUBJECT_MAX)


def body(value: str) -> str:
    return validation.text(value, "body", min_len=0, max_len=BODY_MAX, trim=False)


def recipients(values: list[str]) -> list[str]:
    """The logins of ``to``, each once, in the order given."""
    if not values:
        raise BadUserInput("to", "`to` needs at least one recipient.")
    logins: list[str] = []
    for value in values:
        login = validation.login(value, "to")
        if login not in logins:
            logins.append(login)
    if len(logins) > MAX_RECIPIENTS:
        raise BadUserInput("to", f"`to` may name at most {MAX_RECIPIENTS} recipients.")
    return logins


def uploads(values: list[Any] | None) -> list[StoredUpload]:
    """The stored uploads of ``attachments``, each once; a refused one is bad input with its reason."""
    result: list[StoredUpload] = []
    for value in values or ():
        if isinstance(value, RefusedUpload):
            raise value.error or BadUserInput("attachments", value.reason)
        if not isinstance(value, StoredUpload):
            raise BadUserInput(
                "attachments", "Send attachments as files of a multipart request (GraphQL multipart spec)."
            )
        if not any(value is u for u in result):
            result.append(value)
    if len(result) > MAX_FILES:
        raise BadUserInput("attachments", f"At most {MAX_FILES} attachments per email.")
    return result
