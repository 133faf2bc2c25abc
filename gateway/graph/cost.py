"""Static analysis of a GraphQL document before anything runs: depth, aliases, cost.

One walk over the operation computes every measure. Each fragment's measures
are computed once per context and reused at every spread, so the work is
linear in the size of the document however often fragments spread each other
(``fragment F0 { ...F1 ...F1 } fragment F1 { ...F2 ...F2 }`` doubles the
*result*, never the walk).

Cost formula, per field::

    cost(field) = 1 + m * cost(selections)

where ``m`` is 1, except for a list field: inside a connection (a field with a
``first`` argument) the lists ``edges`` and ``nodes`` count ``first`` times
(from the literal, the request's variables, the variable's default, or the
argument's schema default, in that order); any other list counts
the bound its field declares with :func:`max_items` (next to the rule that
enforces it), or ``DEFAULT_LIST_BOUND`` when it declares none. ``@skip``/``@include``
are ignored (counted as included).

Introspection (``__schema``/``__type``) is served from memory: its fields cost
1 each, not multiplied, and it is bounded by shape instead, with a depth
allowance that GraphiQL's introspection query fits and a cap on nested lists
(``types { fields { args`` is three) that stops ``fields { type { fields ...``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLArgument,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    Undefined,
    VariableNode,
    get_named_type,
)
from graphql.type.introspection import SchemaMetaFieldDef, TypeMetaFieldDef, TypeNameMetaFieldDef

from gateway.graph.pagination import MAX_PAGE_SIZE

#: The metadata key of a list field's bound (see :func:`max_items`).
MAX_ITEMS = "max_items"
#: Lists that declare no bound count as one full page.
DEFAULT_LIST_BOUND = MAX_PAGE_SIZE
#: Strawberry keeps a field's own definition in its graphql-core field's extensions.
_STRAWBERRY_DEFINITION = "strawberry-definition"


def max_items(bound: int) -> dict[str, int]:
    """Field metadata declaring the most items a (non-connection) list field can hold:
    ``strawberry.field(metadata=max_items(MAX_RECIPIENTS))``. Connections are bounded
    by their ``first`` instead."""
    return {MAX_ITEMS: bound}


def list_bound(definition: GraphQLField) -> int:
    field = (definition.extensions or {}).get(_STRAWBERRY_DEFINITION)
    metadata = getattr(field, "metadata", None) or {}
    bound = metadata.get(MAX_ITEMS)
    return bound if isinstance(bound, int) else DEFAULT_LIST_BOUND


#: Depth of ``__schema``/``__type`` subtrees: GraphiQL's query needs 15 (its
#: ``TypeRef`` fragment nests ``ofType`` eight times under ``types { fields { type``);
#: the rest is headroom for clients that nest ``ofType`` a little deeper.
INTROSPECTION_MAX_DEPTH = 18
#: Nested lists below ``__schema``: GraphiQL's query needs 3 (``types { fields { args``).
INTROSPECTION_MAX_LISTS = 3

_INTROSPECTION_ROOTS = {"__schema", "__type"}


@dataclass(frozen=True)
class Measures:
    """What one selection set asks for; combined bottom-up."""

    depth: int = 0
    aliases: int = 0
    cost: int = 0
    #: Deepest introspection subtree and its deepest list nesting.
    introspection_depth: int = 0
    introspection_lists: int = 0


@dataclass(frozen=True)
class Analysis:
    depth: int
    aliases: int
    cost: int
    introspection_depth: int
    introspection_lists: int
    fragments: int
    #: Selections the walk looked at: linear in the document's size.
    visits: int
    #: Names of the request variables the measures depend on.
    variables: frozenset[str] = frozenset()


#: (fragment name, inside introspection, page size of the enclosing connection)
_Key = tuple[str, bool, int | None]


class _Walker:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        defaults: Mapping[str, Any],
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.defaults = defaults
        self.memo: dict[_Key, Measures] = {}
        self.in_progress: set[_Key] = set()
        self.visits = 0
        #: Variables the measures depend on (those given as a ``first``): the same for
        #: every walk of a document, whatever their values.
        self.read: set[str] = set()

    def selection_set(
        self,
        node: SelectionSetNode | None,
        parent: GraphQLNamedType | None,
        introspection: bool,
        page: int | None,
    ) -> Measures:
        if node is None:
            return Measures()
        depth = aliases = cost = intro_depth = intro_lists = 0
        for selection in node.selections:
            self.visits += 1
            if isinstance(selection, FieldNode):
                m = self.field(selection, parent, introspection, page)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                scope = self.schema.get_type(condition.name.value) if condition else parent
                m = self.selection_set(selection.selection_set, scope, introspection, page)
            elif isinstance(selection, FragmentSpreadNode):
                m = self.spread(selection.name.value, introspection, page)
            else:
                continue
            depth = max(depth, m.depth)
            aliases += m.aliases
            cost += m.cost
            intro_depth = max(intro_depth, m.introspection_depth)
            intro_lists = max(intro_lists, m.introspection_lists)
        return Measures(depth, aliases, cost, intro_depth, intro_lists)

    def spread(self, name: str, introspection: bool, page: int | None) -> Measures:
        key = (name, introspection, page)
        known = self.memo.get(key)
        if known is not None:
            return known
        fragment = self.fragments.get(name)
        if fragment is None or key in self.in_progress:
            return Measures()  # unknown or cyclic: the standard rules report it
        self.in_progress.add(key)
        scope = self.schema.get_type(fragment.type_condition.name.value)
        measures = self.selection_set(fragment.selection_set, scope, introspection, page)
        self.in_progress.discard(key)
        self.memo[key] = measures
        return measures

    def field(
        self,
        node: FieldNode,
        parent: GraphQLNamedType | None,
        introspection: bool,
        page: int | None,
    ) -> Measures:
        name = node.name.value
        definition = _field_definition(self.schema, parent, name)
        output: GraphQLOutputType | None = definition.type if definition else None
        is_list = _is_list(output)
        named = get_named_type(output) if output is not None else None
        alias = 1 if node.alias else 0
        if not introspection and name in _INTROSPECTION_ROOTS:
            inner = self.selection_set(node.selection_set, named, True, None)
            return Measures(
                depth=1,
                aliases=alias + inner.aliases,
                cost=1 + inner.cost,
                introspection_depth=1 + inner.depth,
                introspection_lists=inner.introspection_lists + int(is_list),
            )
        first = self.page_size(node, definition) if not introspection else None
        inner = self.selection_set(node.selection_set, named, introspection, first)
        if introspection:
            return Measures(
                depth=1 + inner.depth,
                aliases=alias + inner.aliases,
                cost=1 + inner.cost,
                introspection_lists=inner.introspection_lists + int(is_list),
            )
        multiplier = 1
        if is_list:
            if page is not None:
                multiplier = page
            elif definition is not None:
                multiplier = list_bound(definition)
            else:
                multiplier = DEFAULT_LIST_BOUND
        return Measures(
            depth=1 + inner.depth,
            aliases=alias + inner.aliases,
            cost=1 + multiplier * inner.cost,
            introspection_depth=inner.introspection_depth,
            introspection_lists=inner.introspection_lists,
        )

    def page_size(self, node: FieldNode, definition: GraphQLField | None) -> int | None:
        """``first`` of a connection field, resolved; None when the field is no connection."""
        argument: GraphQLArgument | None = definition.args.get("first") if definition else None
        if argument is None:
            return None
        value: Any = Undefined
        for arg in node.arguments or ():
            if arg.name.value != "first":
                continue
            if isinstance(arg.value, IntValueNode):
                value = int(arg.value.value)
            elif isinstance(arg.value, VariableNode):
                var = arg.value.name.value
                self.read.add(var)
                value = self.variables.get(var, self.defaults.get(var, Undefined))
        if value is Undefined or value is None:
            value = argument.default_value
        if isinstance(value, bool) or not isinstance(value, int):
            return MAX_PAGE_SIZE
        return max(value, 0)


def _field_definition(
    schema: GraphQLSchema, parent: GraphQLNamedType | None, name: str
) -> GraphQLField | None:
    if name == "__typename":
        return TypeNameMetaFieldDef
    if name == "__schema":
        return SchemaMetaFieldDef
    if name == "__type":
        return TypeMetaFieldDef
    if isinstance(parent, GraphQLObjectType | GraphQLInterfaceType):
        field: GraphQLField | None = parent.fields.get(name)
        return field
    return None


def _is_list(output: GraphQLOutputType | None) -> bool:
    if isinstance(output, GraphQLNonNull):
        output = output.of_type
    return isinstance(output, GraphQLList)


def _variable_defaults(operation: OperationDefinitionNode) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    for definition in operation.variable_definitions or ():
        value = definition.default_value
        if isinstance(value, IntValueNode):
            defaults[definition.variable.name.value] = int(value.value)
    return defaults


def analyse(
    schema: GraphQLSchema,
    document: DocumentNode,
    variables: Mapping[str, Any] | None = None,
    operation_name: str | None = None,
) -> Analysis:
    """Measure the operations of ``document`` that ``operation_name`` selects.

    With no name every operation counts (the largest of each measure), which is
    what a document with one operation needs; a document with several and no
    name fails validation anyway.
    """
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    operations = [
        d
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
        and (operation_name is None or (d.name is not None and d.name.value == operation_name))
    ]
    total = Measures()
    visits = 0
    read: set[str] = set()
    for operation in operations:
        root = schema.get_root_type(operation.operation)
        walker = _Walker(schema, fragments, variables or {}, _variable_defaults(operation))
        m = walker.selection_set(operation.selection_set, root, False, None)
        visits += walker.visits
        read |= walker.read
        total = Measures(
            depth=max(total.depth, m.depth),
            aliases=max(total.aliases, m.aliases),
            cost=max(total.cost, m.cost),
            introspection_depth=max(total.introspection_depth, m.introspection_depth),
            introspection_lists=max(total.introspection_lists, m.introspection_lists),
        )
    return Analysis(
        depth=total.depth,
        aliases=total.aliases,
        cost=total.cost,
        introspection_depth=total.introspection_depth,
        introspection_lists=total.introspection_lists,
        fragments=len(fragments),
        visits=visits,
        variables=frozenset(read),
    )
