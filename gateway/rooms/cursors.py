"""The ``rooms`` list cursor: where a scan of the rooms table stopped.

It carries Cassandra's paging state (base64) and, for a stop inside a page, the
offset and name of the last room given out. A cursor that does not decode, whose
paging state is not one this table could have produced, or whose offset is far
beyond what a real scan reaches, is ``BAD_USER_INPUT`` on ``after``.
"""

from __future__ import annotations

import base64
import binascii

from gateway.errors import BadUserInput
from gateway.graph.pagination import MAX_PAGE_SIZE, decode_cursor, encode_cursor
from gateway.rooms import rules
from gateway.rooms.paging_state import InvalidPagingState, checked_paging_state
from gateway.rooms.store import SCAN_DRIFT, ScanPosition

#: The largest offset a ``rooms`` cursor is accepted with. Real ones stay within a
#: few pages plus drift from their paging state; far larger ones are forged and
#: would only make the scan read (and skip) more rows.
MAX_SCAN_OFFSET = 10 * MAX_PAGE_SIZE + SCAN_DRIFT


def scan_cursor(position: ScanPosition) -> str:
    """The paging state (base64), and for a room inside a page its offset and name."""
    state = position.paging_state
    encoded = base64.urlsafe_b64encode(state).decode().rstrip("=") if state is not None else None
    return encode_cursor({"p": encoded, "o": position.offset, "n": position.name})


def scan_position(cursor: str | None) -> ScanPosition | None:
    """Where the scan resumes after ``cursor``; None for the start."""
    payload = decode_cursor(cursor)
    if payload is None:
        return None
    state, offset, name = payload.get("p"), payload.get("o"), payload.get("n")
    if (
        not isinstance(offset, int)
        or isinstance(offset, bool)
        or not 0 <= offset <= MAX_SCAN_OFFSET
        or not (state is None or isinstance(state, str))
        or not (name is None or isinstance(name, str))
    ):
        raise BadUserInput("after", "Invalid cursor.")
    try:
        raw = base64.urlsafe_b64decode(state + "=" * (-len(state) % 4)) if state else None
        paging_state = checked_paging_state(raw, rules.ROOM_NAME) if raw is not None else None
    except (binascii.Error, InvalidPagingState) as exc:
        raise BadUserInput("after", "Invalid cursor.") from exc
    return ScanPosition(paging_state, offset, name)
