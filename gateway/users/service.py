"""Accounts and their sessions: signing up, in and out, and profile changes.

Signing up spans both stores: the login is claimed in ``users`` (``INSERT ...
IF NOT EXISTS``, so of concurrent sign-ups for one login exactly one wins) and
only then is a session written for it. Arguments arrive validated
(``rules.py``); the password hash is computed here, after the other checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.broker.pubsub import PubSub
from gateway.broker.sessions import announce_revoked, session_key
from gateway.db import clock
from gateway.errors import Conflict, NotFound, Unauthenticated
from gateway.settings import Settings
from gateway.users.passwords import hash_password, verify_password
from gateway.users.records import SessionRecord, UserRecord
from gateway.users.session_cache import SessionCache
from gateway.users.store import UserStore

WRONG_CREDENTIALS = "Wrong login or password."
#: Seconds ``signOut`` waits for its own process to hear its revocation through the broker.
REVOCATION_ECHO_SECONDS = 1.0


@dataclass(frozen=True)
class NewAccount:
    """A sign-up's fields, each already validated."""

    login: str
    password: str
    firstname: str
    lastname: str
    email: str
    bio: str


@dataclass(frozen=True)
class AccountService:
    users: UserStore
    sessions: SessionCache
    settings: Settings
    pubsub: PubSub

    async def sign_up(self, account: NewAccount) -> tuple[UserRecord, SessionRecord]:
        """CONFLICT when the login is taken."""
        record = UserRecord(
            login=account.login,
            firstname=account.firstname,
            lastname=account.lastname,
            email=account.email,
            bio=account.bio,
            created_at=clock.now(),
            password_hash=await hash_password(self.settings, account.password),
        )
        if not await self.users.create(record):
            raise Conflict(f"The login '{record.login}' is taken.", field="login")
        return record, await self.sessions.create(record.login)

    async def check_password(self, login: str | None, password: str) -> UserRecord:
        """The user of ``login`` when ``password`` is theirs; one UNAUTHENTICATED error for
        an unknown login (None: one no user can have) and a wrong password alike, after
        the same hashing work."""
        record = await self.users.get(login) if login else None
        ok = await verify_password(self.settings, record.password_hash if record else None, password)
        if not ok or record is None:
            raise Unauthenticated(WRONG_CREDENTIALS)
        return record

    async def start_session(self, login: str) -> SessionRecord:
        return await self.sessions.create(login)

    async def sign_out(self, token: str) -> None:
        """Revoke the session and tell every process: their session caches drop it and its
        open connections close. Answers once this process has heard the announcement (at
        most :data:`REVOCATION_ECHO_SECONDS`), so every process has been sent it before the
        client can send its next request."""
        await self.sessions.revoke(token)
        await self.sessions.announce(
            session_key(token), lambda: announce_revoked(self.pubsub, token), REVOCATION_ECHO_SECONDS
        )

    async def update_profile(self, login: str, changes: dict[str, str]) -> UserRecord:
        """Change the given fields; NOT_FOUND when the account is gone."""
        if not await self.users.update_profile(login, changes):
            raise NotFound("Your account no longer exists.")
        record = await self.users.get(login)
        if record is None:
            raise NotFound("Your account no longer exists.")
        return record
