"""The rate limits of the API, named in one place, and the checks callers make.

What each limit is keyed by is what an attacker would exhaust or probe: a login
for password guessing, a client address for sign-ups and anonymous comments, a
user for what a signed-in account can send, upload or look up. Callers name a
:class:`Limit` and a key; refusal is :class:`~gateway.errors.RateLimited`.
"""

from __future__ import annotations

import enum
import logging

from gateway.errors import RateLimited
from gateway.ratelimit.limiter import Backoff, InProcessRateLimiter, LimiterUnavailable, RateLimiter
from gateway.settings import Settings
from gateway.settings.values import Rule, parse_rate

log = logging.getLogger(__name__)


class Limit(enum.Enum):
    """Each limit, with the setting that configures it."""

    #: signIn attempts per client address.
    SIGN_IN = "rate_sign_in"
    #: signUp per client address.
    SIGN_UP = "rate_sign_up"
    #: addComment (anonymous) per client address.
    COMMENT = "rate_comments"
    #: sendMessage, postRoomMessage, sendEmail per user.
    SEND = "rate_sends"
    #: uploadContacts and emails with attachments per user.
    UPLOAD = "rate_uploads"
    #: verification codes requested per user.
    VERIFICATION_REQUEST = "rate_verification_requests"
    #: wrong verification codes per user.
    WRONG_CODE = "rate_wrong_codes"
    #: identities an address-book upload newly answered with their user, per user.
    IDENTITY_LOOKUP = "rate_identity_lookups"
    #: automatic persisted queries registered per client address.
    PERSISTED_QUERIES = "rate_persisted_queries"


#: Limits that refuse (``UNAVAILABLE``) while a shared limiter cannot reach its state:
#: those standing between an attacker and a secret (passwords, codes) or another
#: person's privacy (who owns an identity), where an outage must not open a window
#: for unlimited guessing. The others limit volume (sign-ups, comments, sends,
#: uploads): an outage's worth of excess is bounded and cleaned up, while refusing
#: them would stop the product's everyday actions, so they allow and log.
#: The sign-in back-off per login fails closed as well.
FAIL_CLOSED = frozenset({Limit.SIGN_IN, Limit.VERIFICATION_REQUEST, Limit.WRONG_CODE, Limit.IDENTITY_LOOKUP})


def rules_of(settings: Settings) -> dict[Limit, Rule | None]:
    return {limit: parse_rate(limit.name.lower(), getattr(settings, limit.value)) for limit in Limit}


def sign_in_backoff(settings: Settings) -> Backoff:
    return Backoff(
        "sign_in_failures",
        settings.sign_in_free_failures,
        settings.sign_in_backoff,
        settings.sign_in_backoff_max,
    )


class RateLimits:
    """The process's limits over one :class:`RateLimiter` (in-process unless given)."""

    def __init__(self, settings: Settings, limiter: RateLimiter | None = None) -> None:
        self.rules = rules_of(settings)
        self.backoff = sign_in_backoff(settings)
        self.limiter: RateLimiter = limiter or InProcessRateLimiter()

    async def check(self, limit: Limit, key: str, cost: int = 1) -> None:
        """Take ``cost`` from ``key``'s bucket of ``limit``, or raise RateLimited.

        ``cost=0`` takes nothing and raises only when the bucket is empty: for
        limits charged after the work, such as wrong codes, checked before it."""
        rule = self.rules[limit]
        if rule is None:
            return
        if cost > rule.capacity:
            raise RateLimited(
                rule.period,
                f"This request needs {cost} at once; at most {rule.capacity} are allowed "
                f"per {rule.period:g} s.",
            )
        try:
            decision = await self.limiter.take(key, rule, cost)
        except LimiterUnavailable:
            if limit in FAIL_CLOSED:
                raise
            log.debug("rate limit %s not checked: its state is unreachable; allowed", limit.name)
            return
        if not decision.allowed:
            raise RateLimited(decision.retry_after)

    # -- signIn: growing back-off per login ---------------------------------

    async def begin_sign_in(self, login: str) -> None:
        """Raise RateLimited while ``login`` waits out its failures; otherwise this
        attempt counts as a failure until :meth:`sign_in_succeeded`. Fails closed
        (:class:`LimiterUnavailable`) when the shared state is unreachable."""
        decision = await self.limiter.attempt(login, self.backoff)
        if not decision.allowed:
            raise RateLimited(decision.retry_after)

    async def sign_in_succeeded(self, login: str) -> None:
        """Forget ``login``'s failures; if the state became unreachable since the attempt,
        the sign-in still succeeds and the failures simply stay counted."""
        try:
            await self.limiter.forgive(login, self.backoff)
        except LimiterUnavailable:
            log.warning("sign-in failures of a login not forgiven: the rate-limit state is unreachable")
