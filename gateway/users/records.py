"""The users domain's rows as records: a user (``users``) and a session (``sessions``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gateway.db import clock
from gateway.db.session import Row


@dataclass(frozen=True)
class UserRecord:
    login: str
    firstname: str
    lastname: str
    email: str
    bio: str
    created_at: datetime
    password_hash: str

    @classmethod
    def from_row(cls, row: Row) -> UserRecord:
        return cls(
            login=row["login"],
            firstname=row["firstname"] or "",
            lastname=row["lastname"] or "",
            email=row["email"] or "",
            bio=row["bio"] or "",
            created_at=clock.utc(row["created_at"]),
            password_hash=row["password_hash"] or "",
        )


@dataclass(frozen=True)
class SessionRecord:
    token: str
    login: str
    expires_at: datetime
