"""The address-book cursor: the network and identity hash of the last contact given out.

A cursor that does not decode, names an unknown network or carries anything but
a SHA-256 hex digest is ``BAD_USER_INPUT`` on ``after``.
"""

from __future__ import annotations

import re

from gateway.contacts import rules
from gateway.contacts.records import BookEntry
from gateway.errors import BadUserInput
from gateway.graph.pagination import decode_cursor, encode_cursor

_HASH_HEX = re.compile(r"[0-9a-f]{64}")


def contact_cursor(entry: BookEntry) -> str:
    return encode_cursor({"n": entry.network, "h": entry.identity_hash.hex()})


def contact_position(after: str | None) -> tuple[str, bytes] | None:
    """The (network, identity hash) to resume after; None for the start."""
    payload = decode_cursor(after)
    if payload is None:
        return None
    network, digest = payload.get("n"), payload.get("h")
    if network not in rules.NETWORKS or not isinstance(digest, str) or not _HASH_HEX.fullmatch(digest):
        raise BadUserInput("after", "Invalid cursor.")
    return network, bytes.fromhex(digest)
