"""Compare-and-set loops over lightweight transactions, with a bound, and retries of
idempotent ones whose outcome is unknown.

A CAS write (``UPDATE ... IF col = <what we read>``) loses when another writer
changed the cell between our read and our write. The loser re-reads and tries
again. Under heavy contention that could go on for long, so the number of
attempts is bounded; after the last one the caller gets ``ContentionExhausted``
(an ``UNAVAILABLE``: retrying later is safe because nothing was written).
Jittered exponential back-off spreads the contenders out so that they stop
colliding on the same Paxos round.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from gateway.db.session import CassandraUnavailable, ContentionExhausted, Database

T = TypeVar("T")

#: Attempts before giving up. With 5 ms base and doubling capped at 200 ms,
#: 12 attempts wait at most ~1.2 s in total, under the driver's request timeout.
DEFAULT_ATTEMPTS = 12
BASE_DELAY = 0.005
MAX_DELAY = 0.2

#: Attempts for an idempotent lightweight transaction whose outcome is unknown
#: (a CAS write timeout under contention). Re-running ``participants + {x}
#: IF EXISTS`` is harmless, so the gateway retries instead of failing the join.
IDEMPOTENT_LWT_ATTEMPTS = 4
IDEMPOTENT_LWT_BACKOFF = 0.05


async def compare_and_set(
    db: Database,
    attempt: Callable[[], Awaitable[T | None]],
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    what: str = "compare-and-set",
) -> T:
    """Run ``attempt`` until it returns a value; ``None`` means "lost, re-read and retry"."""
    delay = BASE_DELAY
    for n in range(attempts):
        outcome = await attempt()
        if outcome is not None:
            return outcome
        if n + 1 < attempts:
            db.count_lwt_retry()
            await asyncio.sleep(random.uniform(0, delay))
            delay = min(delay * 2, MAX_DELAY)
    raise ContentionExhausted(f"{what}: still contended after {attempts} attempts")


async def retry_unknown_outcome(attempt: Callable[[], Awaitable[T]]) -> T:
    """Run an idempotent write again when Cassandra could not say whether it applied."""
    delay = IDEMPOTENT_LWT_BACKOFF
    for n in range(IDEMPOTENT_LWT_ATTEMPTS):
        try:
            return await attempt()
        except CassandraUnavailable:
            if n + 1 == IDEMPOTENT_LWT_ATTEMPTS:
                raise
        await asyncio.sleep(random.uniform(delay / 2, delay))
        delay *= 2
    raise AssertionError("unreachable")
