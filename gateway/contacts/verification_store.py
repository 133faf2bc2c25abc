"""One-time codes that prove a user owns an identity (``identity_verifications``).

A code is 6 digits, so there are only 10^6 of them: any unkeyed hash of one
(SHA-256, or even argon2 at a cost a login flow can afford) is reversed by
trying them all, offline, from a dump of the table. The stored value is
``HMAC-SHA256(key, login:identity hash:code)`` with a key derived from the
identity pepper, which never sits in the database: without it a dump says
nothing, and checking a guess online costs one HMAC. Online guessing is what
the wrong-code limit stops: after ``max_wrong`` wrong codes the code is burnt
and the row refuses guesses and new codes until it expires.

Every write of the table is a lightweight transaction, so concurrent guesses
each count and a code is consumed at most once.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from gateway.contacts.records import Pending
from gateway.db import clock
from gateway.db.lwt import compare_and_set
from gateway.db.session import Database

CODE_DIGITS = 6
_KEY_LABEL = b"identity-verification-codes"


def new_code() -> str:
    return f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"


def code_key(pepper: bytes) -> bytes:
    """The codes' HMAC key: derived from the pepper, distinct from the identity hashes' key."""
    return hmac.new(pepper, _KEY_LABEL, hashlib.sha256).digest()


def code_hash(key: bytes, login: str, identity_hash: bytes, code: str) -> bytes:
    """Bound to the user and the identity: a stored hash is worth nothing for another pair."""
    message = f"{login}:{identity_hash.hex()}:{code}".encode()
    return hmac.new(key, message, hashlib.sha256).digest()


_KEY = "login = ? AND identity_hash = ?"


class VerificationStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def pending(self, login: str, identity_hash: bytes) -> Pending | None:
        row = (
            await self.db.execute(
                f"SELECT code_hash, expires_at, wrong_codes FROM identity_verifications WHERE {_KEY}",
                (login, identity_hash),
            )
        ).one()
        if row is None or row["expires_at"] is None:
            return None
        expires_at = clock.utc(row["expires_at"])
        if expires_at <= clock.now():
            return None
        code = row["code_hash"]
        return Pending(bytes(code) if code is not None else None, expires_at, row["wrong_codes"] or 0)

    async def issue(self, login: str, identity_hash: bytes, hashed: bytes, ttl: int) -> Pending:
        """Store a new code, replacing a pending one: the wrong guesses made so far carry
        over, so asking for a new code never buys more guesses. A code burnt meanwhile
        is not replaced: the burnt row is returned (``code_hash`` None) instead."""
        expires_at = clock.now() + timedelta(seconds=ttl)

        async def attempt() -> Pending | None:
            seen = await self.pending(login, identity_hash)
            if seen is not None and seen.code_hash is None:
                return seen
            wrong = seen.wrong_codes if seen is not None else 0
            if seen is None:
                result = await self.db.execute(
                    "INSERT INTO identity_verifications (login, identity_hash, code_hash, expires_at,"
                    " wrong_codes) VALUES (?, ?, ?, ?, 0) IF NOT EXISTS USING TTL ?",
                    (login, identity_hash, hashed, expires_at, ttl),
                )
            else:
                result = await self.db.execute(
                    "UPDATE identity_verifications USING TTL ? SET code_hash = ?, expires_at = ?,"
                    f" wrong_codes = ? WHERE {_KEY} IF wrong_codes = ?",
                    (ttl, hashed, expires_at, wrong, login, identity_hash, wrong),
                )
            return Pending(hashed, expires_at, wrong) if result.applied else None

        return await compare_and_set(self.db, attempt, what="issue a verification code")

    async def count_wrong(self, login: str, identity_hash: bytes, seen: Pending, max_wrong: int) -> int:
        """One more wrong guess against ``seen``; burns the code at ``max_wrong``.
        Returns the wrong guesses counted so far (at least ``seen.wrong_codes + 1``)."""

        current = [seen]

        async def attempt() -> int | None:
            guessed = current[0]
            wrong = guessed.wrong_codes + 1
            if wrong < max_wrong:
                assignments, params = "wrong_codes = ?", [wrong]
            else:
                assignments, params = "wrong_codes = ?, code_hash = null", [wrong]
            result = await self.db.execute(
                f"UPDATE identity_verifications USING TTL ? SET {assignments}"
                f" WHERE {_KEY} IF wrong_codes = ? AND code_hash = ?",
                (
                    guessed.seconds_left(),
                    *params,
                    login,
                    identity_hash,
                    guessed.wrong_codes,
                    guessed.code_hash,
                ),
            )
            if result.applied:
                return wrong
            fresh = await self.pending(login, identity_hash)
            if fresh is None or fresh.code_hash is None:
                return max_wrong
            current[0] = fresh
            return None

        return await compare_and_set(self.db, attempt, what="count a wrong verification code")

    async def consume(self, login: str, identity_hash: bytes, hashed: bytes) -> bool:
        """``DELETE ... IF code_hash = <this code>``: of concurrent uses of one code, one wins."""
        result = await self.db.execute(
            f"DELETE FROM identity_verifications WHERE {_KEY} IF code_hash = ?",
            (login, identity_hash, hashed),
        )
        return result.applied
