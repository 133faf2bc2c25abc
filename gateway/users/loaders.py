"""Batched user reads: every ``User`` a request names costs one ``IN`` read per 100."""

from __future__ import annotations

from gateway.db.session import IN_CHUNK
from gateway.graph.context import Context
from gateway.graph.dataloader import Loader
from gateway.users.presence import Presence, PresenceState
from gateway.users.records import UserRecord
from gateway.users.store import UserStore


def user_loader(context: Context) -> Loader[str, UserRecord | None]:
    store = context.store(UserStore)

    async def load(logins: list[str]) -> list[UserRecord | None]:
        found = await store.get_many(logins)
        return [found.get(login) for login in logins]

    return Loader(load_fn=load, max_batch_size=IN_CHUNK)


def presence_loader(context: Context) -> Loader[str, PresenceState | None]:
    """The presence of users as the request's viewer may see it (None where they may not),
    for every user of a request together: who may see whom, one board read and one read of
    the stored presence."""
    presence = context.services.provided(Presence)

    async def load(logins: list[str]) -> list[PresenceState | None]:
        visible = await presence.visible_to(await context.viewer(), logins)
        states = await presence.states(visible)
        return [states.get(login) for login in logins]

    return Loader(load_fn=load, max_batch_size=IN_CHUNK)
