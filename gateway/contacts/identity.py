"""An identity (a network and a normalised id on it) and the hash that stands for it.

Tables keyed by identity store :func:`identity_hash`, a keyed HMAC-SHA256 of
``network:normalised id``. Phone numbers have so few possible values that a
plain SHA-256 is reversed by enumerating them; without the pepper (a secret
setting that never sits in the database) a dump of those tables reveals nothing.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass


@dataclass(frozen=True)
class Identity:
    network: str
    network_id: str


def identity_hash(pepper: bytes, identity: Identity) -> bytes:
    """HMAC-SHA256 of ``network:id`` under the pepper: the key of every identity-keyed table."""
    message = f"{identity.network}:{identity.network_id}".encode()
    return hmac.new(pepper, message, hashlib.sha256).digest()
