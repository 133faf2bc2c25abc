"""What a query selects beneath the field being resolved.

List resolvers use it to load, in one batch, what their items' fields will
need (users, counts) only when the query asks for those fields. A page of 50
items whose ``author`` is an async resolver costs graphql-core 50 awaitables to
schedule and gather, several times the cost of the batched read itself; with
the page's users loaded up front the item fields resolve synchronously. Items
built elsewhere (a single item, a mutation's result, a subscription event)
fall back to the per-request loaders.
"""

from __future__ import annotations

from strawberry.types import Info


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
