"""Depth and alias limits, reported as ``QUERY_TOO_COMPLEX``.

Token limits are the parser's (``MaxTokensLimiter``); page sizes and the total
number of list items a request may ask for are enforced by the pagination
helper at execution time, where variable values are known.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationRule,
)


def _depth(
    selection_set: SelectionSetNode | None,
    fragments: dict[str, FragmentDefinitionNode],
    seen: frozenset[str],
) -> int:
    if selection_set is None:
        return 0
    deepest = 0
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            if selection.name.value.startswith("__"):
                continue  # introspection is not data; GraphiQL's own query is deep
            deepest = max(deepest, 1 + _depth(selection.selection_set, fragments, seen))
        elif isinstance(selection, InlineFragmentNode):
            deepest = max(deepest, _depth(selection.selection_set, fragments, seen))
        elif isinstance(selection, FragmentSpreadNode):
            name = selection.name.value
            fragment = fragments.get(name)
            if fragment is not None and name not in seen:
                deepest = max(deepest, _depth(fragment.selection_set, fragments, seen | {name}))
    return deepest


def _aliases(
    selection_set: SelectionSetNode | None,
    fragments: dict[str, FragmentDefinitionNode],
    seen: frozenset[str],
) -> int:
    if selection_set is None:
        return 0
    count = 0
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            count += (1 if selection.alias else 0) + _aliases(selection.selection_set, fragments, seen)
        elif isinstance(selection, InlineFragmentNode):
            count += _aliases(selection.selection_set, fragments, seen)
        elif isinstance(selection, FragmentSpreadNode):
            name = selection.name.value
            fragment = fragments.get(name)
            if fragment is not None and name not in seen:
                count += _aliases(fragment.selection_set, fragments, seen | {name})
    return count


def query_limits_rule(max_depth: int, max_aliases: int) -> type[ValidationRule]:
    class QueryLimits(ValidationRule):
        def enter_document(self, node: DocumentNode, *_args: Any) -> None:
            fragments = {
                d.name.value: d for d in node.definitions if isinstance(d, FragmentDefinitionNode)
            }
            for definition in node.definitions:
                if not isinstance(definition, OperationDefinitionNode):
                    continue
                depth = _depth(definition.selection_set, fragments, frozenset())
                if depth > max_depth:
                    self._report(f"Query depth {depth} exceeds the limit of {max_depth}.", definition)
                aliases = _aliases(definition.selection_set, fragments, frozenset())
                if aliases > max_aliases:
                    self._report(f"{aliases} aliases exceed the limit of {max_aliases}.", definition)

        def _report(self, message: str, node: OperationDefinitionNode) -> None:
            self.report_error(
                GraphQLError(message, nodes=[node], extensions={"code": "QUERY_TOO_COMPLEX"})
            )

    return QueryLimits
