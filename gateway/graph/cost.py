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

Introspection (``__schema``/``__type``) is costed like any other selection,
and exactly: the schema is known, so :class:`_IntrospectionCost` counts the
fields the selection resolves over it (``types { fields { name } }`` costs one
per type and one per field of each), every alias counted again. Counting stops
once it passes the request's budget, so the work is bounded by the limit, not
by what an aliased document asks for. GraphiQL's full introspection query costs
about 5 000 on this schema. Its shape is bounded too, with a depth allowance
that GraphiQL's query fits and a cap on nested lists (``types { fields { args``
is three) that stops ``fields { type { fields ...``.

Fields that hold long text declare their bound with :func:`text_bound`: such a
field costs one more per 250 characters it may hold (a post's body of up to
100 000 characters costs 401, a message's 4000 characters 17), so a page of long
texts aliased many times is refused before it is read, like a page of many items.
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
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    GraphQLUnionType,
    GraphQLWrappingType,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    StringValueNode,
    Undefined,
    VariableNode,
    get_named_type,
)
from graphql.type.introspection import SchemaMetaFieldDef, TypeMetaFieldDef, TypeNameMetaFieldDef

from gateway.graph.executor_internals import strawberry_definition
from gateway.graph.pagination import MAX_PAGE_SIZE

#: The metadata key of a list field's bound (see :func:`max_items`).
MAX_ITEMS = "max_items"
#: Lists that declare no bound count as one full page.
DEFAULT_LIST_BOUND = MAX_PAGE_SIZE


def max_items(bound: int) -> dict[str, int]:
    """Field metadata declaring the most items a (non-connection) list field can hold:
    ``strawberry.field(metadata=max_items(MAX_RECIPIENTS))``. Connections are bounded
    by their ``first`` instead."""
    return {MAX_ITEMS: bound}


#: Introspection is counted up to this cost when the caller names no budget.
DEFAULT_BUDGET = 1_000_000

#: The metadata key of a text field's bound in characters (see :func:`text_bound`).
MAX_CHARS = "max_chars"
#: A text field costs one more per this many characters it may hold: at the default cost
#: limit a request can ask for about 12.5 million characters, within the response limit.
CHARS_PER_COST = 250


def text_bound(max_chars: int) -> dict[str, int]:
    """Field metadata declaring the most characters a text field can hold:
    ``strawberry.field(metadata=text_bound(BODY_MAX))``; it then costs
    ``1 + max_chars // CHARS_PER_COST``."""
    return {MAX_CHARS: max_chars}


def _metadata(definition: GraphQLField) -> dict[str, Any]:
    field = strawberry_definition(definition)
    return getattr(field, "metadata", None) or {}


def list_bound(definition: GraphQLField) -> int:
    bound = _metadata(definition).get(MAX_ITEMS)
    return bound if isinstance(bound, int) else DEFAULT_LIST_BOUND


def own_cost(definition: GraphQLField | None) -> int:
    """What a field costs by itself, before its selections: 1, more for long text."""
    if definition is None:
        return 1
    chars = _metadata(definition).get(MAX_CHARS)
    return 1 + chars // CHARS_PER_COST if isinstance(chars, int) else 1


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
        introspection: _IntrospectionCost,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.defaults = defaults
        self.introspection = introspection
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
                cost=self.introspection.root(node, self.read),
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
            cost=own_cost(definition) + multiplier * inner.cost,
            introspection_depth=inner.introspection_depth,
            introspection_lists=inner.introspection_lists,
        )

    def page_size(self, node: FieldNode, definition: GraphQLField | None) -> int | None:
        """The page size of a connection field (``first``, or ``last`` when the query gives
        it), resolved; None when the field is no connection."""
        argument: GraphQLArgument | None = definition.args.get("first") if definition else None
        if argument is None:
            return None
        given = [self._argument(node, name) for name in ("first", "last")]
        sizes = [value for value in given if value is not Undefined and value is not None]
        if not sizes:
            sizes = [argument.default_value]
        if not all(_an_int(size) for size in sizes):
            return MAX_PAGE_SIZE
        return int(max(0, *sizes))

    def _argument(self, node: FieldNode, name: str) -> Any:
        for arg in node.arguments or ():
            if arg.name.value != name:
                continue
            if isinstance(arg.value, IntValueNode):
                return int(arg.value.value)
            if isinstance(arg.value, VariableNode):
                var = arg.value.name.value
                self.read.add(var)
                return self.variables.get(var, self.defaults.get(var, Undefined))
            return None
        return Undefined


def _an_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
    budget: int = DEFAULT_BUDGET,
) -> Analysis:
    """Measure the operations of ``document`` that ``operation_name`` selects.

    With no name every operation counts (the largest of each measure), which is
    what a document with one operation needs; a document with several and no
    name fails validation anyway. Introspection is counted up to ``budget`` (the
    cost the request may still spend): past it the cost reported is merely more
    than ``budget``.
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
        values = variables or {}
        counter = _IntrospectionCost(schema, fragments, values, budget)
        walker = _Walker(schema, fragments, values, _variable_defaults(operation), counter)
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


class _OverBudget(Exception):
    """The introspection being counted costs more than the budget; counting stops."""


#: The introspection type a field of an introspection type resolves to, for the fields
#: whose values are objects; every other field is a leaf (a scalar, an enum, or a list of them).
_CHILD_KIND: dict[tuple[str, str], str] = {
    ("__Schema", "types"): "__Type",
    ("__Schema", "queryType"): "__Type",
    ("__Schema", "mutationType"): "__Type",
    ("__Schema", "subscriptionType"): "__Type",
    ("__Schema", "directives"): "__Directive",
    ("__Type", "fields"): "__Field",
    ("__Type", "interfaces"): "__Type",
    ("__Type", "possibleTypes"): "__Type",
    ("__Type", "enumValues"): "__EnumValue",
    ("__Type", "inputFields"): "__InputValue",
    ("__Type", "ofType"): "__Type",
    ("__Field", "args"): "__InputValue",
    ("__Field", "type"): "__Type",
    ("__InputValue", "type"): "__Type",
    ("__Directive", "args"): "__InputValue",
}


@dataclass(frozen=True, eq=False)
class _Plan:
    """An introspection selection set, flattened (fragments spread, aliases dropped) and
    shared by every selection of the same shape: ``fields`` fields cost one each, and
    each ``nested`` one (name, its kind, its plan) costs its items' plans too."""

    fields: int
    nested: tuple[tuple[str, str, _Plan], ...]


class _IntrospectionCost:
    """How many fields an introspection selection resolves over this schema, exactly.

    Mirrors graphql-core's introspection types: ``__Schema.types`` lists every type,
    ``__Type.fields`` an object's or interface's fields (deprecated ones included: an
    upper bound whatever ``includeDeprecated`` says), ``__Field.args`` its arguments,
    ``__Type.ofType`` one level of a wrapped type, and so on; a list of scalars or enums
    (``locations``) is one field.

    A selection set is first compiled into a :class:`_Plan`, and plans of the same shape
    are one object, so ten aliases of one selection are counted once and looked up nine
    times; a plan is counted once per schema element, and a plan of leaves only costs its
    size times the number of items without visiting them. Counting raises
    :class:`_OverBudget` once a running total passes what the budget leaves, so the work
    of a document that varies every alias to defeat the sharing is still bounded by the
    budget, not by what it asks for."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        budget: int,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.budget = budget
        #: Plans by shape, and by the selection set they were compiled from.
        self.shapes: dict[tuple[object, ...], _Plan] = {}
        self.compiled: dict[tuple[int, str], _Plan] = {}
        self.counted: dict[tuple[int, int], int] = {}
        self.expanding: set[str] = set()
        #: What the introspection fields of this document cost so far.
        self.spent = 0

    def root(self, node: FieldNode, read: set[str]) -> int:
        """The cost of a ``__schema`` or ``__type`` field (itself included); once the
        document's introspection passes the budget, enough to pass it by one."""
        if self.spent > self.budget:
            return 1  # the request is refused already, whatever else it asks
        try:
            if node.name.value == "__schema":
                plan = self.plan(node.selection_set, "__Schema")
                cost = 1 + self.count(plan, "__Schema", self.schema)
            else:
                named = self.schema.get_type(self._type_name(node, read) or "")
                plan = self.plan(node.selection_set, "__Type")
                cost = 1 if named is None else 1 + self.count(plan, "__Type", named)
        except _OverBudget:
            cost = self.budget - self.spent + 1
        self.spent += cost
        return cost

    def _type_name(self, node: FieldNode, read: set[str]) -> str | None:
        for argument in node.arguments or ():
            if argument.name.value != "name":
                continue
            if isinstance(argument.value, StringValueNode):
                return argument.value.value
            if isinstance(argument.value, VariableNode):
                read.add(argument.value.name.value)
                value = self.variables.get(argument.value.name.value)
                return value if isinstance(value, str) else None
        return None

    # -- compiling ------------------------------------------------------------

    def plan(self, node: SelectionSetNode | None, kind: str) -> _Plan:
        if node is None:
            return self._shared(0, ())
        key = (id(node), kind)
        known = self.compiled.get(key)
        if known is None:
            fields, nested = self._flatten(node, kind)
            known = self.compiled[key] = self._shared(fields, tuple(sorted(nested, key=_by_name)))
        return known

    def _flatten(self, node: SelectionSetNode, kind: str) -> tuple[int, list[tuple[str, str, _Plan]]]:
        fields = 0
        nested: list[tuple[str, str, _Plan]] = []
        for selection in node.selections:
            if isinstance(selection, FieldNode):
                fields += 1
                name = selection.name.value
                child = _CHILD_KIND.get((kind, name))
                if child is not None and selection.selection_set is not None:
                    nested.append((name, child, self.plan(selection.selection_set, child)))
            elif isinstance(selection, InlineFragmentNode):
                more, deeper = self._flatten(selection.selection_set, kind)
                fields += more
                nested += deeper
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is None or name in self.expanding:
                    continue  # unknown or cyclic: the standard rules report it
                self.expanding.add(name)
                more, deeper = self._flatten(fragment.selection_set, kind)
                self.expanding.discard(name)
                fields += more
                nested += deeper
        return fields, nested

    def _shared(self, fields: int, nested: tuple[tuple[str, str, _Plan], ...]) -> _Plan:
        shape = (fields, *((name, id(plan)) for name, _, plan in nested))
        plan = self.shapes.get(shape)
        if plan is None:
            plan = self.shapes[shape] = _Plan(fields, nested)
        return plan

    # -- counting -------------------------------------------------------------

    def count(self, plan: _Plan, kind: str, element: object) -> int:
        """What ``plan`` resolves on one schema element of introspection type ``kind``."""
        if not plan.nested:
            return plan.fields
        key = (id(plan), id(element))
        known = self.counted.get(key)
        if known is not None:
            return known
        limit = self.budget - self.spent
        total = plan.fields
        for name, child_kind, child_plan in plan.nested:
            items = _introspection_children(self.schema, kind, element, name)
            if not child_plan.nested:
                total += child_plan.fields * len(items)
            else:
                for item in items:
                    total += self.count(child_plan, child_kind, item)
                    if total > limit:
                        raise _OverBudget
            if total > limit:
                raise _OverBudget
        self.counted[key] = total
        return total


def _by_name(entry: tuple[str, str, _Plan]) -> tuple[str, int]:
    return entry[0], id(entry[2])


def _introspection_children(schema: GraphQLSchema, kind: str, element: Any, name: str) -> list[Any]:
    """The schema elements an object-valued field of introspection type ``kind`` resolves
    to on ``element`` (an empty list for null)."""
    if kind == "__Schema":
        if name == "types":
            return list(schema.type_map.values())
        if name == "directives":
            return list(schema.directives)
        root = {
            "queryType": schema.query_type,
            "mutationType": schema.mutation_type,
            "subscriptionType": schema.subscription_type,
        }[name]
        return [] if root is None else [root]
    if kind == "__Type":
        if name == "ofType":
            return [element.of_type] if isinstance(element, GraphQLWrappingType) else []
        if name in ("fields", "interfaces"):
            if not isinstance(element, GraphQLObjectType | GraphQLInterfaceType):
                return []
            return list(element.fields.values()) if name == "fields" else list(element.interfaces)
        if name == "possibleTypes":
            if not isinstance(element, GraphQLInterfaceType | GraphQLUnionType):
                return []
            return list(schema.get_possible_types(element))
        if name == "enumValues":
            return list(element.values.values()) if isinstance(element, GraphQLEnumType) else []
        if isinstance(element, GraphQLInputObjectType):  # inputFields
            return list(element.fields.values())
        return []
    if name == "args":  # of a __Field or a __Directive
        return list(element.args.values())
    return [element.type]  # the type of a __Field or an __InputValue
