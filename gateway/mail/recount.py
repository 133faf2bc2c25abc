"""``gateway mail-recount <login>``: repair a user's unread counters after a failed write."""

from __future__ import annotations

import sys

from gateway.db.session import Database
from gateway.errors import BadUserInput
from gateway.graph import validation
from gateway.mail.store import MailStore
from gateway.settings import Settings
from gateway.users.store import UserStore


async def recount(db: Database, settings: Settings, login: str) -> int:
    """Print each folder's counter before and after; exit status 2 for an unknown user."""
    try:
        key = validation.login(login)
    except BadUserInput as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    if await UserStore(db, settings).get(key) is None:
        print(f"error: no user '{key}'", file=sys.stderr)
        return 2
    report = await MailStore(db, settings).recount(key)
    for label, (before, after) in report.items():
        change = "" if before == after else f"  (was {before})"
        print(f"{key} {label}: {after} unread{change}")
    return 0
