"""The talk-partner cursor: a pair's exact place in the main view.

Packed bytes, URL-safe base64: a version byte, the slot's milliseconds, the last
message's microseconds, then the partner's login. Cursors issued before the view
was exact (the slot, then the login) are still read: they resume at the top of
their slot, so a page may repeat a few partners of it but skips none. A cursor
that does not decode, or whose numbers or login cannot be one, is
``BAD_USER_INPUT`` on ``after`` (or ``before``).
"""

from __future__ import annotations

import base64
import binascii
import struct

from gateway.errors import BadUserInput
from gateway.messenger.activity_store import Mark

_VERSION = 2
_MARK = struct.Struct(">Bqq")
_SLOT = struct.Struct(">q")
_LOGIN_MAX = 30
#: A slot is milliseconds since the epoch, which a timestamp holds up to the year 9999.
_SLOT_MAX = 253_402_300_799_999
#: Microseconds past the start of a slot that are past any slot's end (a slot is at most days).
_ABOVE_ANY_SLOT = 10**12


def mark_cursor(mark: Mark) -> str:
    raw = _MARK.pack(_VERSION, mark.slot, mark.micros) + mark.partner.encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def mark_position(cursor: str | None, field: str = "after") -> Mark | None:
    """The place to resume from; None for the top (or the bottom, paging back)."""
    if cursor is None:
        return None
    invalid = BadUserInput(field, "Invalid cursor.")
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"=" * (-len(cursor) % 4))
        if raw[:1] == bytes([_VERSION]):
            _, slot, micros = _MARK.unpack(raw[: _MARK.size])
            partner = raw[_MARK.size :].decode()
        else:  # (slot, login): from the top of that slot
            (slot,) = _SLOT.unpack(raw[: _SLOT.size])
            if not raw[_SLOT.size :].decode():
                raise invalid
            # Above every message of that slot (and the slice starts at the slot itself).
            partner, micros = "", slot * 1000 + _ABOVE_ANY_SLOT
    except (binascii.Error, UnicodeError, struct.error) as exc:
        raise invalid from exc
    if not 0 <= slot <= _SLOT_MAX or micros < 0 or len(partner) > _LOGIN_MAX or partner != partner.lower():
        raise invalid
    return Mark(micros, partner, slot)
