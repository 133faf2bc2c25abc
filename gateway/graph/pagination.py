"""Relay connections with opaque cursors and the page-size cap.

A cursor is URL-safe base64 that only the domain that issued it interprets:
packed bytes of (bucket, timeuuid) for time-bucketed lists, a small JSON
document for the others. Clients treat it as opaque. A cursor that does not
decode is ``BAD_USER_INPUT`` on ``after`` (or ``before``).

Timelines page both ways, with Relay's semantics (:func:`page_request`):
``first``/``after`` read towards the tail, ``last``/``before`` towards the head
(``before`` a cursor is nearer the head: newer, for a newest-first list), and a
page's edges are always in the list's order. Of a page's two ``pageInfo`` flags
one comes free with the page (one item more is read); the other, in the
direction the page was not read, may need a read of its own: it is a *probe*
(:data:`Flag`), run only when a query selects the flag.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar
from uuid import UUID

import orjson
import strawberry
from strawberry.types import Info

from gateway.db.timeline import Position
from gateway.errors import BadUserInput
from gateway.graph.errors import QueryTooComplex
from gateway.graph.node import parse_global_id
from gateway.graph.plain_fields import NOT_READ, plain_reader

T = TypeVar("T")

MAX_PAGE_SIZE = 100
#: The most list items one request may ask for in total, summed over every
#: connection it resolves (a page of 100 posts with 100 comments each is 10 100).
MAX_NODES_PER_REQUEST = 5000


#: A page-info flag: known, or a probe that reads it (run only when selected).
Flag = bool | Callable[[], Awaitable[bool]]


def _known(flag: Flag) -> Any:
    return flag if isinstance(flag, bool) else NOT_READ


def _flag(flag: Flag) -> bool | Awaitable[bool]:
    return flag if isinstance(flag, bool) else flag()


#: The paging arguments, described once for every connection field; a field gives its
#: own default page size (``first: First = 50``).
First = Annotated[
    int | None,
    strawberry.argument(
        description="Page forward: how many items to return from the head of the list, or from right "
        "after `after`. 0 to 100 (more is QUERY_TOO_COMPLEX). Not with `last`."
    ),
]
After = Annotated[
    str | None,
    strawberry.argument(
        description="A cursor this list handed out (an edge's `cursor`, or `pageInfo.endCursor`): the "
        "page starts with the item after it. One that does not decode is BAD_USER_INPUT."
    ),
]
Last = Annotated[
    int | None,
    strawberry.argument(
        description="Page backward: how many items to return from right before `before` (nearer the "
        "list's head: newer, in a newest-first list), or from the tail without it. 0 to 100. The edges "
        "stay in the list's order. Not with `first`."
    ),
]
Before = Annotated[
    str | None,
    strawberry.argument(
        description="A cursor this list handed out (an edge's `cursor`, or `pageInfo.startCursor`): the "
        "page ends with the item before it. With `last`, a client catching up after a reconnect asks "
        "for what came after the newest item it holds. Not with `after`."
    ),
]


@strawberry.type(
    description="Where a page stands in its list: the cursors at its two ends, and whether more items "
    "lie beyond them. Paging is stable while items are added: a cursor stays valid, and no page "
    "repeats or skips an item because another arrived meanwhile."
)
class PageInfo:
    end_cursor: str | None = strawberry.field(
        description="The cursor of the page's last edge, to pass as `after` for the next page; null "
        "when the page is empty."
    )
    start_cursor: str | None = strawberry.field(
        default=None,
        description="The cursor of the page's first edge, to pass as `before` for the page before it "
        "(on a field that takes `before`); null when the page is empty.",
    )
    _next: strawberry.Private[Flag] = False
    _previous: strawberry.Private[Flag] = False

    @strawberry.field(
        graphql_type=bool,
        description="Whether more items follow this page towards the list's tail.",
        metadata=plain_reader(lambda p: _known(p._next)),
    )
    def has_next_page(self) -> bool | Awaitable[bool]:
        return _flag(self._next)

    @strawberry.field(
        graphql_type=bool,
        description="Whether more items precede this page towards the list's head.",
        metadata=plain_reader(lambda p: _known(p._previous)),
    )
    def has_previous_page(self) -> bool | Awaitable[bool]:
        return _flag(self._previous)

    @classmethod
    def of(
        cls,
        has_next: Flag,
        end_cursor: str | None,
        has_previous: Flag = False,
        start_cursor: str | None = None,
    ) -> PageInfo:
        return cls(end_cursor=end_cursor, start_cursor=start_cursor, _next=has_next, _previous=has_previous)


@strawberry.type(description="An item of a list, with the cursor that marks its place.")
class Edge(Generic[T]):
    cursor: str = strawberry.field(
        description="Opaque: pass it as `after` (or `before`) to page on from this item. It stays valid "
        "while the list changes."
    )
    node: T = strawberry.field(description="The item.")


@strawberry.type(
    description="One page of a list (a Relay connection): its items with their cursors (`edges`), or "
    "the items alone (`nodes`), and `pageInfo` to ask for the next page. Page with `first`/`after` "
    "(and, where the field takes them, `last`/`before`)."
)
class Connection(Generic[T]):
    edges: list[Edge[T]] = strawberry.field(
        description="The page's items in the list's order, each with its cursor."
    )
    page_info: PageInfo = strawberry.field(
        description="The cursors at the page's ends, and whether more items lie beyond them."
    )

    @strawberry.field(
        description="The nodes of `edges`, for clients that need no cursors.",
        metadata=plain_reader(lambda c: [edge.node for edge in c.edges]),
    )
    def nodes(self) -> list[T]:
        return [edge.node for edge in self.edges]

    @classmethod
    def of(cls, items: Sequence[tuple[str, T]], has_next: Flag, has_previous: Flag = False) -> Connection[T]:
        edges = [Edge(cursor=cursor, node=node) for cursor, node in items]
        return cls(
            edges=edges,
            page_info=PageInfo.of(
                has_next,
                edges[-1].cursor if edges else None,
                has_previous,
                edges[0].cursor if edges else None,
            ),
        )

    @classmethod
    def paged(
        cls, request: PageRequest, items: Sequence[tuple[str, T]], more: bool, beyond: Flag
    ) -> Connection[T]:
        """A page read as ``request`` says: ``more`` items lie past it in the direction it
        was read; ``beyond`` tells (or probes) whether any lie past it the other way."""
        if request.backward:
            return cls.of(items, has_next=beyond, has_previous=more)
        return cls.of(items, has_next=more, has_previous=beyond)

    @classmethod
    def empty(cls) -> Connection[T]:
        return cls.of([], False)


@dataclass(frozen=True)
class PageRequest:
    """What a connection's arguments ask for: ``size`` items read from ``cursor`` (None:
    from the head, or the tail when ``backward``), towards the head when ``backward``."""

    size: int
    cursor: str | None
    backward: bool

    @property
    def cursor_field(self) -> str:
        return "before" if self.backward else "after"


def page_request(
    info: Info | None,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    default: int,
) -> PageRequest:
    """The page a connection's ``first``/``after``/``last``/``before`` ask for, checked and
    charged to the request's item budget. A page runs one way: ``first`` with ``after``,
    or ``last`` with ``before``. ``first`` has a default in the schema; only a ``first``
    the query names conflicts with ``last``."""
    if last is None and before is None:
        return PageRequest(page_size(info, first, default), after, backward=False)
    if first is not None and (info is None or _names_argument(info, "first")):
        raise BadUserInput("last", "Ask for `first` or `last`, not both.")
    if after is not None:
        raise BadUserInput("before", "Page forward with `first`/`after` or backward with `last`/`before`.")
    return PageRequest(page_size(info, last, default, "last"), before, backward=True)


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
#: What ``base64.urlsafe_b64encode`` does after encoding, done here without its two Python calls.
_URL_SAFE = bytes.maketrans(b"+/", b"-_")
#: Buckets are positive and fit the 32-bit ``int`` column of most bucketed tables.
MAX_BUCKET = 2**31 - 1


def position_cursor(position: Position) -> str:
    """A (bucket, timeuuid) position as 32 URL-safe characters.

    Packed bytes rather than JSON: list pages encode one cursor per edge, and
    ``json.dumps`` there cost as much CPU as building the page's items."""
    raw = _POSITION.pack(position.bucket, position.item_id.bytes)
    return binascii.b2a_base64(raw, newline=False).translate(_URL_SAFE).decode()


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


def resume_point(value: str, node_type: str, field: str = "after") -> UUID:
    """The message a resuming subscription replays after: its ``id`` (a ``node_type``
    global id, what a client holds of an event) or the cursor of any page's edge that
    holds one (a (bucket, timeuuid) position). Only its time counts: the replay starts
    there, whatever list the cursor came from."""
    try:
        type_name, key = parse_global_id(value, field)
    except BadUserInput:
        type_name, key = "", ""
    if type_name == node_type:
        try:
            message_id = UUID(key.rpartition(":")[2])
        except ValueError:
            message_id = None
        if message_id is None or message_id.version != 1:
            raise BadUserInput(field, f"`{field}` is not the id of a message.")
        return message_id
    try:
        position = decode_position(value, field)
    except BadUserInput:
        position = None
    if position is None:
        raise BadUserInput(field, f"`{field}` is neither a message's id nor a message list's cursor.")
    return position.item_id


def _names_argument(info: Info, name: str) -> bool:
    """Whether the query itself gives the field's argument ``name`` (not its default)."""
    return any(getattr(selected, "arguments", {}).get(name) is not None for selected in info.selected_fields)


def page_size(info: Info | None, first: int | None, default: int, field: str = "first") -> int:
    """Validate ``first`` (or ``last``, as ``field`` says) and charge it to the request's node budget."""
    size = default if first is None else first
    if size < 0:
        raise BadUserInput(field, f"`{field}` must not be negative.")
    if size > MAX_PAGE_SIZE:
        raise QueryTooComplex(f"`{field}` may be at most {MAX_PAGE_SIZE}.", field=field)
    if info is not None:
        context = info.context
        spent = getattr(context, "nodes_requested", 0) + size
        if spent > MAX_NODES_PER_REQUEST:
            raise QueryTooComplex(
                f"This query asks for more than {MAX_NODES_PER_REQUEST} list items in total."
            )
        context.nodes_requested = spent
    return size
