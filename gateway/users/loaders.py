"""Batched user reads: every ``User`` a request names costs one ``IN`` read per 100."""

from __future__ import annotations

from gateway.db.session import IN_CHUNK
from gateway.graph.context import Context
from gateway.graph.dataloader import Loader
from gateway.users.records import UserRecord
from gateway.users.store import UserStore


def user_loader(context: Context) -> Loader[str, UserRecord | None]:
    store = context.store(UserStore)

    async def load(logins: list[str]) -> list[UserRecord | None]:
        found = await store.get_many(logins)
        return [found.get(login) for login in logins]

    return Loader(load_fn=load, max_batch_size=IN_CHUNK)
