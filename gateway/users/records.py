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
class UserProfile:
    """What anyone may read of a user: no email, no password hash. An event carries its
    author as one, so that its subscribers read nothing to show who wrote it."""

    login: str
    firstname: str
    lastname: str
    bio: str
    created_at: datetime

    @classmethod
    def of(cls, record: UserRecord) -> UserProfile:
        return cls(record.login, record.firstname, record.lastname, record.bio, record.created_at)

    def to_json(self) -> dict[str, str]:
        return {
            "login": self.login,
            "firstname": self.firstname,
            "lastname": self.lastname,
            "bio": self.bio,
            "createdAt": self.created_at.isoformat(),
        }

    @classmethod
    def from_json(cls, data: dict[str, str]) -> UserProfile:
        return cls(
            login=data["login"],
            firstname=data["firstname"],
            lastname=data["lastname"],
            bio=data["bio"],
            created_at=datetime.fromisoformat(data["createdAt"]),
        )


@dataclass(frozen=True)
class SessionRecord:
    token: str
    login: str
    expires_at: datetime
