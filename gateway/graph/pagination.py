"""Relay connections with opaque cursors and the page-size cap.

A cursor is URL-safe base64 that only the domain that issued it interprets:
packed bytes of (bucket, timeuuid) for time-bucketed lists, a small JSON
document for the others. Clients treat it as opaque. A cursor that does not decode is ``BAD_USER_INPUT`` on
``after``.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Sequence
from typing import Any, Generic, TypeVar
from uuid import UUID

import orjson
import strawberry
from strawberry.types import Info

from gateway.db.timeline import Position
from gateway.errors import BadUserInput
from gateway.graph.errors import QueryTooComplex
from gateway.graph.plain_fields import plain_reader

T = TypeVar("T")

MAX_PAGE_SIZE = 100
#: The most list items one request may ask for in total, summed over every
#: connection it resolves (a page of 100 posts with 100 comments each is 10 100).
MAX_NODES_PER_REQUEST = 5000


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None
    has_previous_page: bool = False
    start_cursor: str | None = None


@strawberry.type
class Edge(Generic[T]):
    cursor: str
    node: T


@strawberry.type
class Connection(Generic[T]):
    edges: list[Edge[T]]
    page_info: PageInfo

    @strawberry.field(
        description="The nodes of `edges`, for clients that need no cursors.",
        metadata=plain_reader(lambda c: [edge.node for edge in c.edges]),
    )
    def nodes(self) -> list[T]:
        return [edge.node for edge in self.edges]

    @classmethod
    def of(cls, items: Sequence[tuple[str, T]], has_next: bool) -> Connection[T]:
        edges = [Edge(cursor=cursor, node=node) for cursor, node in items]
        return cls(
            edges=edges,
            page_info=PageInfo(
                has_next_page=has_next,
                end_cursor=edges[-1].cursor if edges else None,
                start_cursor=edges[0].cursor if edges else None,
            ),
        )

    @classmethod
    def empty(cls) -> Connection[T]:
        return cls.of([], False)


def encode_cursor(payload: dict[str, Any]) -> str:
    """Compact JSON with sorted keys, as ``json.dumps`` writes it for the ASCII values
    cursors hold, through ``orjson`` (a page of 20 encodes 20 cursors)."""
    raw = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, field: str = "after") -> dict[str, Any] | None:
    if cursor is None:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        payload = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise BadUserInput(field, "Invalid cursor.") from exc
    if not isinstance(payload, dict):
        raise BadUserInput(field, "Invalid cursor.")
    return payload


_POSITION = struct.Struct(">q16s")
#: Buckets are positive and fit the 32-bit ``int`` column of most bucketed tables.
MAX_BUCKET = 2**31 - 1


def position_cursor(position: Position) -> str:
    """A (bucket, timeuuid) position as 32 URL-safe characters.

    Packed bytes rather than JSON: list pages encode one cursor per edge, and
    ``json.dumps`` there cost as much CPU as building the page's items."""
    raw = _POSITION.pack(position.bucket, position.item_id.bytes)
    return base64.urlsafe_b64encode(raw).decode()


def decode_position(cursor: str | None, field: str = "after") -> Position | None:
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"=" * (-len(cursor) % 4))
        bucket, item = _POSITION.unpack(raw)
        position = Position(bucket=bucket, item_id=UUID(bytes=item))
    except (binascii.Error, ValueError, UnicodeEncodeError, struct.error) as exc:
        raise BadUserInput(field, "Invalid cursor.") from exc
    if position.item_id.version != 1 or not 0 <= position.bucket <= MAX_BUCKET:
        # Cassandra compares timeuuids only with timeuuids, and a bucket past the column's
        # 32 bits would fail in the driver.
        raise BadUserInput(field, "Invalid cursor.")
    return position


def page_size(info: Info | None, first: int | None, default: int) -> int:
    """Validate ``first`` and charge it to the request's node budget."""
    size = default if first is None else first
    if size < 0:
        raise BadUserInput("first", "`first` must not be negative.")
    if size > MAX_PAGE_SIZE:
        raise QueryTooComplex(f"`first` may be at most {MAX_PAGE_SIZE}.", field="first")
    if info is not None:
        context = info.context
        spent = getattr(context, "nodes_requested", 0) + size
        if spent > MAX_NODES_PER_REQUEST:
            raise QueryTooComplex(
                f"This query asks for more than {MAX_NODES_PER_REQUEST} list items in total."
            )
        context.nodes_requested = spent
    return size
