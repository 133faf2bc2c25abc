"""Resolving the users of a list in one step instead of one async field per item.

A page of 50 messages whose ``author`` is an async resolver costs graphql-core
50 awaitables to schedule and gather, several times the cost of the batched
read itself. When the query selects ``author`` (or a room's ``creator`` /
``participants``), the list resolver loads every user the page names in one
batch, through the same per-request user loader, and hands each item its
users; the item fields then resolve synchronously. Items built elsewhere
(a single room, a posted message, a subscription event) fall back to the loader.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from strawberry.types import Info

from gateway.graph.context import context_of
from gateway.users.loaders import user_loader

if TYPE_CHECKING:
    from gateway.users.schema import User


def selects(info: Info, name: str) -> bool:
    """Whether the field being resolved selects a field ``name`` anywhere beneath it
    (through fragments too; a false positive only costs an unneeded prefetch)."""
    pending = list(info.selected_fields)
    while pending:
        selection = pending.pop()
        for child in getattr(selection, "selections", ()):
            if getattr(child, "name", None) == name:
                return True
            pending.append(child)
    return False


async def users_by_login(info: Info, logins: Iterable[str]) -> dict[str, User]:
    """The users of ``logins`` (those that exist), loaded in one batch."""
    from gateway.users.schema import User

    wanted = sorted(set(logins))
    records = await context_of(info).loader(user_loader).load_many(wanted)
    return {login: User.of(record) for login, record in zip(wanted, records, strict=True) if record}
