"""Users and sessions in Cassandra."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from gateway.db import clock
from gateway.db.session import Database
from gateway.settings import Settings
from gateway.users.records import SessionRecord, UserRecord


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


_USER_COLUMNS = "login, firstname, lastname, email, bio, created_at, password_hash"


class UserStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    async def create(self, user: UserRecord) -> bool:
        """Claim the login; False when someone holds it already (one of N racers wins)."""
        result = await self.db.execute(
            "INSERT INTO users (login, firstname, lastname, email, bio, created_at, password_hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
            (
                user.login,
                user.firstname,
                user.lastname,
                user.email,
                user.bio,
                user.created_at,
                user.password_hash,
            ),
        )
        return result.applied

    async def get(self, login: str) -> UserRecord | None:
        row = (await self.db.execute(f"SELECT {_USER_COLUMNS} FROM users WHERE login = ?", (login,))).one()
        return UserRecord.from_row(row) if row else None

    async def get_many(self, logins: Iterable[str]) -> dict[str, UserRecord]:
        """Users by login: one ``IN`` read per 100 distinct logins, whatever the list size."""
        rows = await self.db.select_in(f"SELECT {_USER_COLUMNS} FROM users WHERE login IN ?", logins)
        return {row["login"]: UserRecord.from_row(row) for row in rows}

    async def update_profile(self, login: str, changes: dict[str, str]) -> bool:
        """Change the given columns. ``IF EXISTS``: never recreates a missing user as a
        partial row, and keeps every write to a user row a lightweight transaction."""
        if not changes:
            return True
        columns = sorted(changes)
        assignments = ", ".join(f"{c} = ?" for c in columns)
        result = await self.db.execute(
            f"UPDATE users SET {assignments} WHERE login = ? IF EXISTS",
            (*[changes[c] for c in columns], login),
        )
        return result.applied


class SessionStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    @property
    def ttl(self) -> timedelta:
        return timedelta(days=self.settings.session_ttl_days)

    async def create(self, login: str) -> SessionRecord:
        """A fresh random 256-bit token; only its SHA-256 is stored, expiring by TTL."""
        token = secrets.token_urlsafe(32)
        now = datetime.now(UTC)
        expires = now + self.ttl
        await self.db.execute(
            "INSERT INTO sessions (token_hash, login, created_at, expires_at) VALUES (?, ?, ?, ?)"
            " USING TTL ?",
            (hash_token(token), login, now, expires, int(self.ttl.total_seconds())),
        )
        return SessionRecord(token=token, login=login, expires_at=expires)

    async def login_of(self, token: str) -> str | None:
        session = await self.active(token)
        return session.login if session else None

    async def active(self, token: str) -> SessionRecord | None:
        """The session of ``token`` while it lives; None when unknown, revoked or expired."""
        row = (
            await self.db.execute(
                "SELECT login, expires_at FROM sessions WHERE token_hash = ?", (hash_token(token),)
            )
        ).one()
        if row is None:
            return None
        expires_at = clock.utc(row["expires_at"])
        if expires_at <= datetime.now(UTC):
            return None
        return SessionRecord(token=token, login=str(row["login"]), expires_at=expires_at)

    async def revoke(self, token: str) -> None:
        await self.db.execute("DELETE FROM sessions WHERE token_hash = ?", (hash_token(token),))
