"""Per-request batched reads of the mail domain."""

from __future__ import annotations

from gateway.db.session import gathered
from gateway.graph.context import Context
from gateway.graph.dataloader import Loader
from gateway.mail.store import MailStore


def unread_counts_loader(context: Context) -> Loader[str, dict[str, int]]:
    """A user's unread counters by label: one read of their counter partition per request."""
    store = context.store(MailStore)

    async def load(logins: list[str]) -> list[dict[str, int]]:
        return await gathered([store.unread_counts(login) for login in logins])

    return Loader(load_fn=load)
