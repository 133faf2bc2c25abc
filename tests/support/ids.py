"""Global ids as the schema hands them out, taken apart where a test must reach the row."""

from __future__ import annotations

import base64
from uuid import UUID


def id_parts(node_id: str) -> list[str]:
    """The type name and key parts of a global id (``base64("Type:part:...")``)."""
    return base64.b64decode(node_id).decode().split(":")


def uuid_of(node_id: str) -> UUID:
    """The stored time-based UUID of a message, comment or email's global id (its last part)."""
    return UUID(id_parts(node_id)[-1])


def key(node_id: str) -> str:
    """:func:`uuid_of` as text: what a view-independent comparison of two ids compares."""
    return str(uuid_of(node_id))
