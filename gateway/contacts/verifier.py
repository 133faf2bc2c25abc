"""The verification flow: send a code for an identity, check the code a user types.

``requestIdentityVerification`` stores a fresh code (hashed) and delivers it;
``linkIdentity`` calls :meth:`Verifier.check`, which consumes a right code and
counts a wrong one. Refusals, in the API's words:

- no pending code, an expired one, a used one, a wrong one: ``BAD_USER_INPUT`` on ``code``;
- the code burnt by too many wrong guesses, or too many code requests:
  ``RATE_LIMITED`` with ``retryAfter`` (a burnt code blocks the identity for
  that user until it would have expired).
"""

from __future__ import annotations

import hmac
import re

from gateway.contacts.identity import Identity
from gateway.contacts.verification_store import (
    CODE_DIGITS,
    VerificationStore,
    code_hash,
    code_key,
    new_code,
)
from gateway.contacts.webhook import CodeSender
from gateway.db.session import Database
from gateway.errors import BadUserInput, RateLimited
from gateway.settings import Settings

_CODE = re.compile(rf"^[0-9]{{{CODE_DIGITS}}}$")
WRONG_CODE = "This code is wrong or has expired; ask for a new one."


class Verifier:
    def __init__(self, db: Database, settings: Settings, pepper: bytes) -> None:
        self.store = VerificationStore(db)
        self.key = code_key(pepper)
        self.ttl = settings.verification_code_ttl_seconds
        self.max_wrong = settings.verification_max_wrong_codes
        self.sender = CodeSender(
            settings.verification_webhook_url,
            timeout=settings.verification_webhook_timeout,
            attempts=settings.verification_webhook_attempts,
            log_codes=settings.embedded,
        )

    async def request(self, login: str, identity: Identity, identity_hash: bytes) -> None:
        pending = await self.store.pending(login, identity_hash)
        if pending is not None and pending.code_hash is None:
            raise self._burnt(pending.seconds_left())
        code = new_code()
        stored = await self.store.issue(
            login, identity_hash, code_hash(self.key, login, identity_hash, code), self.ttl
        )
        if stored.code_hash is None:
            raise self._burnt(stored.seconds_left())
        await self.sender.send(identity.network, identity.network_id, code, stored.expires_at)

    async def check(self, login: str, identity_hash: bytes, code: str) -> None:
        """Returns when ``code`` is right (and consumes it); raises otherwise."""
        if not _CODE.match(code.strip()):
            raise BadUserInput("code", f"`code` must be the {CODE_DIGITS} digits you were sent.")
        pending = await self.store.pending(login, identity_hash)
        if pending is None:
            raise BadUserInput("code", WRONG_CODE)
        if pending.code_hash is None:
            raise self._burnt(pending.seconds_left())
        guess = code_hash(self.key, login, identity_hash, code.strip())
        if hmac.compare_digest(guess, pending.code_hash):
            if await self.store.consume(login, identity_hash, guess):
                return
            raise BadUserInput("code", WRONG_CODE)
        wrong = await self.store.count_wrong(login, identity_hash, pending, self.max_wrong)
        if wrong >= self.max_wrong:
            raise self._burnt(pending.seconds_left())
        raise BadUserInput("code", WRONG_CODE)

    def _burnt(self, seconds: int) -> RateLimited:
        message = "Too many wrong codes; this code is no longer valid. Ask for a new one later."
        return RateLimited(seconds, message, field="code")
