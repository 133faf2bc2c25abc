"""The one interface every rate limit goes through, and its in-process implementation.

A :class:`RateLimiter` keeps three kinds of state per key: token buckets
(:meth:`~RateLimiter.take`), failure back-off (:meth:`~RateLimiter.attempt`,
:meth:`~RateLimiter.forgive`) and marks that expire (:meth:`~RateLimiter.mark`,
:meth:`~RateLimiter.marked`). Each call is one
atomic read-modify-write of one key, so a broker-backed limiter (a Redis script
per method) shares the same limits between processes without changing callers.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from gateway.errors import BrokerUnavailable
from gateway.settings.values import Rule

#: Keys the in-process limiter remembers (about 200 bytes each); the least recently
#: used go first, and those are almost always refilled buckets, i.e. no state at all.
MAX_KEYS = 100_000
#: Seconds without a failure after which earlier failures no longer count.
FORGET_AFTER = 86400.0


class LimiterUnavailable(BrokerUnavailable):
    """A shared limiter cannot reach its state; the policy decides whether that refuses
    (``UNAVAILABLE``, with this message) or allows the request."""

    def __init__(self) -> None:
        super().__init__("Rate limits cannot be checked right now; retrying later is safe.")


@dataclass(frozen=True)
class Decision:
    allowed: bool
    #: Seconds until the same request would be allowed (0 when it is).
    retry_after: float = 0.0


@dataclass(frozen=True)
class Backoff:
    """``free`` failures in a row cost nothing; after that each attempt waits
    ``base * 2**(failures - free)`` seconds after the last failure, at most ``ceiling``."""

    name: str
    free: int
    base: float
    ceiling: float

    def delay(self, failures: int) -> float:
        if failures < self.free:
            return 0.0
        return float(min(self.ceiling, self.base * 2 ** min(failures - self.free, 62)))


class RateLimiter(Protocol):
    async def take(self, key: str, rule: Rule, cost: int = 1) -> Decision:
        """Take ``cost`` tokens from ``key``'s bucket if it holds them; ``cost=0`` only
        asks whether one token is left. A refusal takes nothing."""
        ...

    async def attempt(self, key: str, backoff: Backoff) -> Decision:
        """Refuse while ``key`` waits out its failures; otherwise count this attempt as
        one more failure until :meth:`forgive` says it succeeded. Counting it up front
        means concurrent attempts cannot all slip in before the first one fails."""
        ...

    async def forgive(self, key: str, backoff: Backoff) -> None:
        """Forget ``key``'s failures (a success)."""
        ...

    async def mark(self, key: str, seconds: float) -> None:
        """Remember ``key`` for ``seconds`` (a login's address it signed in from)."""
        ...

    async def marked(self, key: str) -> bool:
        """Whether ``key`` is remembered."""
        ...


@dataclass
class _Bucket:
    tokens: float
    stamp: float


@dataclass
class _Strikes:
    failures: int
    last: float


@dataclass
class _Mark:
    until: float


_State = _Bucket | _Strikes | _Mark


class InProcessRateLimiter:
    """Token buckets and failure counts in this process's memory, at most ``max_keys`` of them."""

    def __init__(self, *, max_keys: int = MAX_KEYS, clock: Callable[[], float] = time.monotonic) -> None:
        self._state: OrderedDict[str, _State] = OrderedDict()
        self._max_keys = max_keys
        self._clock = clock

    def __len__(self) -> int:
        return len(self._state)

    def _remember(self, key: str, value: _State) -> None:
        self._state[key] = value
        self._state.move_to_end(key)
        while len(self._state) > self._max_keys:
            self._state.popitem(last=False)

    async def take(self, key: str, rule: Rule, cost: int = 1) -> Decision:
        now = self._clock()
        key = f"{rule.name}:{key}"
        bucket = self._state.get(key)
        tokens = float(rule.capacity)
        if isinstance(bucket, _Bucket):
            tokens = min(tokens, bucket.tokens + (now - bucket.stamp) * rule.refill_per_second)
        needed = max(cost, 1)
        if tokens < needed:
            # More than a full bucket never fits: wait for a full one, then the caller must ask for less.
            missing = min(needed, rule.capacity) - tokens
            self._remember(key, _Bucket(tokens, now))
            return Decision(False, max(missing, 0.0) / rule.refill_per_second)
        self._remember(key, _Bucket(tokens - cost, now))
        return Decision(True)

    async def attempt(self, key: str, backoff: Backoff) -> Decision:
        key = f"{backoff.name}:{key}"
        strikes = self._state.get(key)
        now = self._clock()
        failures = 0
        if isinstance(strikes, _Strikes) and now - strikes.last <= FORGET_AFTER:
            failures = strikes.failures
            wait = strikes.last + backoff.delay(failures) - now
            if wait > 0:
                return Decision(False, wait)
        self._remember(key, _Strikes(failures + 1, now))
        return Decision(True)

    async def forgive(self, key: str, backoff: Backoff) -> None:
        self._state.pop(f"{backoff.name}:{key}", None)

    async def mark(self, key: str, seconds: float) -> None:
        self._remember(key, _Mark(self._clock() + seconds))

    async def marked(self, key: str) -> bool:
        mark = self._state.get(key)
        if not isinstance(mark, _Mark):
            return False
        if mark.until <= self._clock():
            del self._state[key]
            return False
        return True
