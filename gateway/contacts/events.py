"""What the contacts domain publishes, on which channels, and how it crosses a broker.

``contactDiscovered`` subscribers get a :class:`Discovery` on their user's
contacts channel; a link announces its fan-out job on :data:`FANOUT_CHANNEL`,
so that a worker takes it at once (``fanout.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.broker.codec import EventType
from gateway.contacts.records import JobKey

#: Where a link announces its new job to the workers (the message is its :class:`JobKey`).
FANOUT_CHANNEL = "contacts:fanout"


def contacts_channel(login: str) -> str:
    """The pubsub channel of a user's ``contactDiscovered`` subscription."""
    return f"user:{login}:contacts"


@dataclass(frozen=True)
class Discovery:
    """The message published to an uploader: which of their book rows found its owner."""

    network: str
    identity_hash: bytes
    owner: str


def _to_json(discovery: Discovery) -> dict[str, Any]:
    return {"network": discovery.network, "hash": discovery.identity_hash.hex(), "owner": discovery.owner}


def _from_json(data: dict[str, Any]) -> Discovery:
    return Discovery(network=data["network"], identity_hash=bytes.fromhex(data["hash"]), owner=data["owner"])


#: The identity hash travels as hex; the clear identity never leaves the uploader's rows.
DISCOVERY = EventType("contacts.discovery", Discovery, _to_json, _from_json)


def _job_to_json(key: JobKey) -> dict[str, Any]:
    return {"hash": key.identity_hash.hex(), "owner": key.owner}


def _job_from_json(data: dict[str, Any]) -> JobKey:
    return JobKey(identity_hash=bytes.fromhex(data["hash"]), owner=data["owner"])


#: A linked identity's fan-out job, announced so that a worker takes it at once.
FANOUT_NUDGE = EventType("contacts.fanout-job", JobKey, _job_to_json, _job_from_json)
