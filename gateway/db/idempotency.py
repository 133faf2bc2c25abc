"""Idempotency keys of creating mutations (``mutation_keys``, see ``cql/009_mutation_keys.cql``).

A creating mutation sent with a client key runs as:

1. :meth:`MutationKeys.claim` (``INSERT ... IF NOT EXISTS USING TTL``) records
   the id the mutation is about to create under (actor, operation, key); a
   retry loses the claim and gets the first request's id instead;
2. the item is written under that id by a replay-safe write (the same id gives
   the same rows), so a retry that finds no item (the first request died
   before writing) writes it, and one that finds it writes nothing;
3. :meth:`MutationKeys.take_count` flips ``counted`` from false to true (an
   LWT) right before the counters move: of the first request and all its
   retries, exactly one moves them. Counter increments cannot be made
   idempotent, so the flip comes first: a request that dies between the flip
   and the increment leaves the counter one short, which the domain's recount
   repairs, and never one over.

Every write of the table is a lightweight transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from gateway.db import clock
from gateway.db.session import Database

#: How long a key is remembered: long enough for a phone that was offline over a
#: weekend to flush its outbox and still be deduplicated (as ``clientMessageId``).
KEY_TTL = timedelta(days=3)
#: Longest key accepted (a UUID is 36 characters).
KEY_MAX = 100

_WHERE = "actor = ? AND operation = ? AND key = ?"


@dataclass(frozen=True)
class KeyClaim:
    actor: str
    operation: str
    key: str
    #: The id (or slug) of what the first request with this key creates.
    result: str
    #: True for the first request with the key; False for a retry.
    first: bool
    expires_at: datetime

    def ttl_left(self) -> int:
        return max(1, int((self.expires_at - clock.now()).total_seconds()))


class MutationKeys:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def claim(self, actor: str, operation: str, key: str, result: str) -> KeyClaim:
        expires_at = clock.now() + KEY_TTL
        outcome = await self.db.execute(
            "INSERT INTO mutation_keys (actor, operation, key, result, counted, expires_at)"
            " VALUES (?, ?, ?, ?, false, ?) IF NOT EXISTS USING TTL ?",
            (actor, operation, key, result, expires_at, int(KEY_TTL.total_seconds())),
        )
        if outcome.applied:
            return KeyClaim(actor, operation, key, result, True, expires_at)
        row = outcome.one()
        assert row is not None
        return KeyClaim(actor, operation, key, row["result"], False, clock.utc(row["expires_at"]))

    async def take_count(self, claim: KeyClaim) -> bool:
        """True for the one request of this key that may move the counters."""
        outcome = await self.db.execute(
            f"UPDATE mutation_keys USING TTL ? SET counted = true WHERE {_WHERE} IF counted = false",
            (claim.ttl_left(), claim.actor, claim.operation, claim.key),
        )
        return outcome.applied
