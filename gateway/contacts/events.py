"""What ``contactDiscovered`` subscribers receive, and how it crosses a broker."""

from __future__ import annotations

from typing import Any

from gateway.broker.codec import EventType
from gateway.contacts.jobs import JobKey
from gateway.contacts.service import Discovery, contacts_channel

__all__ = ["DISCOVERY", "FANOUT_NUDGE", "contacts_channel"]


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
