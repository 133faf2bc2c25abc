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

from graphql import FieldNode, FragmentSpreadNode, InlineFragmentNode, SelectionNode
from strawberry.types import Info

from gateway.graph.executor_internals import resolve_info


def selects(info: Info, name: str) -> bool:
    """Whether the field being resolved selects a field ``name`` anywhere beneath it
    (through fragments too; a false positive only costs an unneeded prefetch).

    Walks graphql-core's AST: ``info.selected_fields`` would first convert the whole
    subtree, arguments and directives included, into Strawberry's own nodes."""
    raw = resolve_info(info)
    fragments = raw.fragments
    seen: set[str] = set()
    pending: list[SelectionNode] = []
    for node in raw.field_nodes:
        if node.selection_set:
            pending.extend(node.selection_set.selections)
    while pending:
        selection = pending.pop()
        if isinstance(selection, FieldNode):
            if selection.name.value == name:
                return True
            if selection.selection_set:
                pending.extend(selection.selection_set.selections)
        elif isinstance(selection, InlineFragmentNode):
            pending.extend(selection.selection_set.selections)
        elif isinstance(selection, FragmentSpreadNode):
            spread = selection.name.value
            fragment = fragments.get(spread)
            if fragment is not None and spread not in seen:
                seen.add(spread)
                pending.extend(fragment.selection_set.selections)
    return False
