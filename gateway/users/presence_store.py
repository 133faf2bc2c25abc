"""``user_presence``: when a user was last seen, and whether they appear offline."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from gateway.db import clock
from gateway.db.session import Database
from gateway.settings import Settings


@dataclass(frozen=True)
class StoredPresence:
    last_seen_at: datetime | None = None
    invisible: bool = False


class PresenceStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db

    async def get_many(self, logins: Iterable[str]) -> dict[str, StoredPresence]:
        """What is stored for ``logins`` (nothing stored: seen never, visible); one ``IN``
        read per 100."""
        rows = await self.db.select_in(
            "SELECT login, last_seen_at, invisible FROM user_presence WHERE login IN ?", logins
        )
        return {
            row["login"]: StoredPresence(
                clock.utc(row["last_seen_at"]) if row["last_seen_at"] else None, bool(row["invisible"])
            )
            for row in rows
        }

    async def seen(self, login: str, at: datetime) -> None:
        """The user's last socket closed at ``at`` (one write per disconnect)."""
        await self.db.execute("UPDATE user_presence SET last_seen_at = ? WHERE login = ?", (at, login))

    async def set_invisible(self, login: str, invisible: bool) -> None:
        await self.db.execute("UPDATE user_presence SET invisible = ? WHERE login = ?", (invisible, login))
