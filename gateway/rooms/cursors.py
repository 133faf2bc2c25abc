"""The cursors of the rooms domain: opaque to clients, checked before any read.

- ``rooms``: the name of the last room of the page (the scan continues after
  its token). Cursors of earlier gateways (a driver paging state, an offset
  from it and a room name) are still accepted: their room name, or the name
  inside their checked paging state, is the position.
- ``Room.participants``: the last login of the page.
- ``User.rooms``: the last (room name, incarnation id) of the page.
"""

from __future__ import annotations

import base64
import binascii
from uuid import UUID

from gateway.errors import BadUserInput
from gateway.graph.pagination import MAX_PAGE_SIZE, decode_cursor, encode_cursor
from gateway.rooms import rules
from gateway.rooms.paging_state import InvalidPagingState, paging_state_key

#: The largest offset accepted in an earlier gateway's ``rooms`` cursor (a few
#: pages plus the drift it searched); larger ones were forged.
MAX_LEGACY_SCAN_OFFSET = 10 * MAX_PAGE_SIZE + 200
#: Longest login a participants cursor may hold (logins are far shorter).
MAX_LOGIN_LENGTH = 64


def _invalid() -> BadUserInput:
    return BadUserInput("after", "Invalid cursor.")


def scan_cursor(name: str) -> str:
    return encode_cursor({"n": name})


def decode_scan_cursor(cursor: str | None) -> str | None:
    """The room name a ``rooms`` page continues after; None: from the start."""
    payload = decode_cursor(cursor)
    if payload is None:
        return None
    name, state, offset = payload.get("n"), payload.get("p"), payload.get("o", 0)
    if (
        not isinstance(offset, int)
        or isinstance(offset, bool)
        or not 0 <= offset <= MAX_LEGACY_SCAN_OFFSET
        or not (state is None or isinstance(state, str))
        or not (name is None or isinstance(name, str))
    ):
        raise _invalid()
    if name is not None:
        if not rules.ROOM_NAME.match(name):
            raise _invalid()
        return name
    if state is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(state + "=" * (-len(state) % 4))
        return paging_state_key(raw, rules.ROOM_NAME)
    except (binascii.Error, ValueError, InvalidPagingState) as exc:
        raise _invalid() from exc


def login_cursor(login: str) -> str:
    return encode_cursor({"l": login})


def decode_login_cursor(cursor: str | None) -> str | None:
    payload = decode_cursor(cursor)
    if payload is None:
        return None
    login = payload.get("l")
    if not isinstance(login, str) or not 0 < len(login) <= MAX_LOGIN_LENGTH:
        raise _invalid()
    return login


def user_room_cursor(name: str, room_id: UUID) -> str:
    return encode_cursor({"n": name, "i": str(room_id)})


def decode_user_room_cursor(cursor: str | None) -> tuple[str, UUID] | None:
    payload = decode_cursor(cursor)
    if payload is None:
        return None
    name, room_id = payload.get("n"), payload.get("i")
    if not isinstance(name, str) or not rules.ROOM_NAME.match(name) or not isinstance(room_id, str):
        raise _invalid()
    try:
        parsed = UUID(room_id)
    except ValueError as exc:
        raise _invalid() from exc
    if parsed.version != 1:
        # Cassandra compares timeuuids only with timeuuids.
        raise _invalid()
    return name, parsed
