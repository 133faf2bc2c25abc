"""The blog's cursors: (bucket, timeuuid) for every list of posts and comments.

They are opaque to clients. A cursor that does not decode, or names something
Cassandra could not compare against (an id that is not a timeuuid, a bucket
outside ``int``), is ``BAD_USER_INPUT`` on ``after`` (or ``before``) instead of a
server error.

An author's list issued cursors of the timeuuid alone before it was bucketed;
clients may hold such cursors across the upgrade, so they are still accepted:
a post's bucket follows from its id.
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from gateway.db.timeline import Position
from gateway.errors import BadUserInput
from gateway.graph.pagination import decode_cursor, decode_position


def _invalid(field: str) -> BadUserInput:
    return BadUserInput(field, "Invalid cursor.")


def timeline_position(after: str | None, field: str = "after") -> Position | None:
    return decode_position(after, field)


def author_position(
    after: str | None, place: Callable[[UUID], Position], field: str = "after"
) -> Position | None:
    """A position in an author's list: a (bucket, timeuuid) cursor, or an older cursor
    of the timeuuid alone, placed by ``place``."""
    if after is None:
        return None
    try:
        return timeline_position(after, field)
    except BadUserInput:
        pass
    payload = decode_cursor(after, field)
    try:
        post_id = UUID(str(payload["i"])) if payload is not None else None
    except (KeyError, ValueError) as exc:
        raise _invalid(field) from exc
    if post_id is None or post_id.version != 1:
        raise _invalid(field)
    return place(post_id)
