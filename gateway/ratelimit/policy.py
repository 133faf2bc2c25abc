"""The rate limits of the API, named in one place, and the checks callers make.

What each limit is keyed by is what an attacker would exhaust or probe: a login
and a client address for password guessing (with a looser ceiling per login), a
client address for sign-ups, anonymous comments and persisted-query
registrations, a user for what a signed-in account can send, upload or look up. Callers name a
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
    #: signIn attempts per login from addresses it has not signed in from lately.
    SIGN_IN_LOGIN = "rate_sign_in_login"
    #: signUp per client address.
    SIGN_UP = "rate_sign_up"
    #: addComment (anonymous) per client address.
    COMMENT = "rate_comments"
    #: sendMessage, postRoomMessage, sendEmail per user.
    SEND = "rate_sends"
    #: uploadContacts and emails with attachments per user.
    UPLOAD = "rate_uploads"
    #: setPresenceVisible per user.
    PRESENCE = "rate_presence"
    #: setTyping per user.
    TYPING = "rate_typing"
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
#: The sign-in back-off per login and address fails closed as well.
FAIL_CLOSED = frozenset(
    {
        Limit.SIGN_IN,
        Limit.SIGN_IN_LOGIN,
        Limit.VERIFICATION_REQUEST,
        Limit.WRONG_CODE,
        Limit.IDENTITY_LOOKUP,
    }
)


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

    # -- signIn: back-off per login and address, a ceiling per login -------

    async def begin_sign_in(self, login: str, address: str) -> None:
        """Raise RateLimited while ``login`` waits out its failures from ``address``, or,
        unless it signed in from ``address`` lately, while its ceiling over every
        address is spent; otherwise this attempt counts as a failure until
        :meth:`sign_in_succeeded`. Fails closed (:class:`LimiterUnavailable`) when the
        shared state is unreachable.

        Failures are counted per (login, address), so someone failing on purpose
        backs off only their own address and never locks the owner out. Guessing
        spread over many addresses meets the looser per-login bucket instead, which
        slows it to the bucket's rate (a refusal waits for one token, never the
        doubling back-off) and leaves out the addresses the owner signed in from."""
        decision = await self.limiter.attempt(_pair(login, address), self.backoff)
        if not decision.allowed:
            raise RateLimited(decision.retry_after)
        rule = self.rules[Limit.SIGN_IN_LOGIN]
        if rule is not None and not await self.limiter.marked(_familiar(login, address)):
            decision = await self.limiter.take(login, rule)
            if not decision.allowed:
                raise RateLimited(decision.retry_after)

    async def sign_in_succeeded(self, login: str, address: str) -> None:
        """Forget the failures of ``login`` from ``address`` and remember the address as
        one the login signs in from; if the state became unreachable since the attempt,
        the sign-in still succeeds and the failures simply stay counted."""
        try:
            await self.limiter.forgive(_pair(login, address), self.backoff)
            await self.limiter.mark(_familiar(login, address), FAMILIAR_SECONDS)
        except LimiterUnavailable:
            log.warning("sign-in failures of a login not forgiven: the rate-limit state is unreachable")


#: How long an address a login signed in from stays exempt from the login's ceiling.
FAMILIAR_SECONDS = 30 * 86400.0


def _pair(login: str, address: str) -> str:
    """One key per (login, address); an address never contains ``@``, so the last one splits it."""
    return f"{login}@{address}"


def _familiar(login: str, address: str) -> str:
    return f"sign_in_familiar:{_pair(login, address)}"
