"""The talk-partner cursor: the (slot, partner) place of a row in the owner's activity partition.

Packed bytes (the slot's milliseconds, then the partner's login), URL-safe
base64. A cursor that does not decode, or whose login is not one, is
``BAD_USER_INPUT`` on ``after``.
"""

from __future__ import annotations

import base64
import binascii
import struct

from gateway.db.clock import micros_of
from gateway.errors import BadUserInput
from gateway.messenger.activity_store import Spot
from gateway.messenger.records import PartnerRecord
from gateway.messenger.store import PartnerPage

_SLOT = struct.Struct(">q")
_LOGIN_MAX = 30
#: A slot is milliseconds since the epoch, which a timestamp holds up to the year 9999.
_SLOT_MAX = 253_402_300_799_999


def spot_cursor(spot: Spot) -> str:
    return base64.urlsafe_b64encode(_SLOT.pack(spot.slot) + spot.partner.encode()).decode().rstrip("=")


def spot_position(after: str | None) -> Spot | None:
    """The place to resume after; None for the top."""
    if after is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(after.encode("ascii") + b"=" * (-len(after) % 4))
        (slot,) = _SLOT.unpack(raw[: _SLOT.size])
        partner = raw[_SLOT.size :].decode()
    except (binascii.Error, UnicodeError, struct.error) as exc:
        raise BadUserInput("after", "Invalid cursor.") from exc
    if not 0 < len(partner) <= _LOGIN_MAX or partner != partner.lower() or not 0 <= slot <= _SLOT_MAX:
        raise BadUserInput("after", "Invalid cursor.")
    return Spot(slot, partner)


def edges_by_recency(page: PartnerPage) -> list[tuple[str, PartnerRecord]]:
    """The page ordered by the last message's time, each with its cursor.

    The activity partition orders by slot only; within a slot the page is
    ordered here. An edge's cursor is the furthest place in the partition of it
    and the edges before it, so resuming from any edge repeats nothing already
    shown, and the last edge's cursor is the page's end.
    """
    ordered = sorted(
        range(len(page.items)),
        key=lambda n: (-page.items[n][0].slot, -_micros_of_last(page.items[n][1])),
    )
    furthest = -1
    edges: list[tuple[str, PartnerRecord]] = []
    for n in ordered:
        furthest = max(furthest, n)
        edges.append((spot_cursor(page.items[furthest][0]), page.items[n][1]))
    return edges


def _micros_of_last(record: PartnerRecord) -> int:
    return micros_of(record.last_message.id) if record.last_message else 0
