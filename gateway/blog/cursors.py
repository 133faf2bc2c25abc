"""The blog's cursors: (bucket, timeuuid) for bucketed timelines, a timeuuid for an author's list.

Both are opaque to clients. A cursor that does not decode, or names something
Cassandra could not compare against (an id that is not a timeuuid, a bucket
outside ``int``), is ``BAD_USER_INPUT`` on ``after`` instead of a server error.
"""

from __future__ import annotations

from uuid import UUID

from gateway.db.timeline import Position
from gateway.errors import BadUserInput
from gateway.graph.pagination import decode_cursor, decode_position, encode_cursor

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def _invalid() -> BadUserInput:
    return BadUserInput("after", "Invalid cursor.")


def timeline_position(after: str | None) -> Position | None:
    position = decode_position(after)
    if position is None:
        return None
    if position.item_id.version != 1 or not _INT_MIN <= position.bucket <= _INT_MAX:
        raise _invalid()
    return position


def author_cursor(post_id: UUID) -> str:
    return encode_cursor({"i": str(post_id)})


def author_position(after: str | None) -> UUID | None:
    payload = decode_cursor(after)
    if payload is None:
        return None
    try:
        post_id = UUID(str(payload["i"]))
    except (KeyError, ValueError) as exc:
        raise _invalid() from exc
    if post_id.version != 1:
        raise _invalid()
    return post_id
