"""Execution with a fast path for plain fields: values read and serialised in place.

graphql-core runs every field the same way: a ``Path``, a ``GraphQLResolveInfo``
(built by Strawberry), the resolver, an awaitable check and ``complete_value``'s
type dispatch, and for an object its sub-selection's own round of the same. For
a *plain* field all of that amounts to reading a value and building the answer
from it. A field is plain when it has no arguments, no directives and no
extensions, and either no resolver (a Strawberry attribute) or a *plain reader*
(:func:`plain_reader`: field metadata that reads what the resolver would return
when that is already at hand, such as a user a page resolver prefetched), and
its type is

- a scalar or an enum, or a list of them; or
- an object type (not an interface or a union), or a list of them, whose
  selection is made of plain fields only: the whole subtree is plain.

:class:`PlainFieldsExecutor` plans each selection set once per request: which
of its response keys are plain, and how to read and complete them. The plans of
an operation whose selections do not depend on its variables (no ``@skip`` or
``@include`` reading one, no ``@defer`` or ``@stream``, no fragment arguments)
are kept for every request that runs the same parsed document. Each plain key
is compiled once, with its plan, into one function of its source
(``_Plain.produce``): no dispatch on the field's kind per value, an object
built as one dict display of its fields' functions, a String, ID or Boolean
value answered as it is, a value's type remembered once it is known not to be
an error or awaitable. Executing the set, a plain field whose value is an
ordinary one all the way down (no null where the type forbids it, no exception
or awaitable, every scalar serialised, every object of its type) is written
directly; anything else, and every other field, goes through graphql-core's
own ``execute_field``, which reads the value again (reading has no side effect)
and produces exactly the value or the error it always did. Results keep the
selection's order. ``tests/integration/test_plain_fields.py`` holds the fast path to the
reference executor, byte for byte, over a corpus of queries.

A field with a resolver the plain path does not read itself (a root field, a loader's, one
with arguments) runs through graphql-core's ``execute_field`` and its resolver. Strawberry
makes that resolver with layers most fields have no use for, so
:func:`install_lean_resolvers` gives every field that needs none of them the lean one
(``executor_internals.lean_resolver``): no argument conversion to walk for scalars, no
extension chain, no coroutine around the function's own. ``tests/unit/test_lean_resolvers.py``
holds it to Strawberry's answers and errors.

The executor extends graphql-core's and Strawberry's past their documented API: what it
uses of them is reached through :mod:`gateway.graph.executor_internals`.
``GATEWAY_PLAIN_FIELDS=0`` runs graphql-core's reference executor with Strawberry's resolvers instead.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from functools import partial
from operator import attrgetter
from types import CoroutineType, GeneratorType
from typing import Any
from uuid import UUID

import strawberry
from graphql import (
    GRAPHQL_MAX_INT,
    GRAPHQL_MIN_INT,
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLID,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfoHelpers,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLString,
    OperationDefinitionNode,
    Undefined,
    VariableNode,
)
from graphql.language import FragmentDefinitionNode, SelectionSetNode
from graphql.pyutils import Path, gather_with_cancel, is_awaitable

from gateway.graph.executor_internals import (
    TYPE_CAST_ATTRIBUTE,
    FieldDetailsList,
    GroupedFieldSet,
    StrawberryExecutor,
    graphql_schema,
    int_output,
    is_basic_resolver,
    lean_resolver,
    runs_middleware,
    settle_in_background,
    strawberry_definition,
    subfields,
    track_async_work,
)

#: The field metadata key of a plain reader.
PLAIN_READER = "gateway.plain_reader"

#: What a plain reader returns when only the field's resolver can tell the value.
NOT_READ: Any = object()


def plain_reader(read: Callable[[Any], Any]) -> dict[str, Any]:
    """``metadata`` for a ``strawberry.field`` with a resolver: ``read(source)`` returns
    what the resolver would return when that needs no ``info`` (a value the source
    already holds), else :data:`NOT_READ`. It must not have side effects."""
    return {PLAIN_READER: read}


def computed_field(compute: Callable[[Any], Any], **options: Any) -> Any:
    """A ``strawberry.field`` whose value ``compute(source)`` makes from what the source
    holds, only when selected: the executor calls it as the resolver, the plain-fields
    path as the reader (so it must need no ``info`` and have no side effects). ``metadata``
    given in ``options`` is kept beside the reader's."""
    metadata = {**options.pop("metadata", {}), **plain_reader(compute)}
    return strawberry.field(resolver=compute, metadata=metadata, **options)


def source_field(path: str, convert: Callable[[Any], Any] | None = None, **options: Any) -> Any:
    """A :func:`computed_field` that reads ``path`` of its source (``"_record.content"``),
    passed through ``convert`` when given (``str`` for a UUID shown as an ID). Its GraphQL
    type is the attribute's annotation in the class. The reader's parameter is named
    ``self``: Strawberry hands the source to that name and takes any other for an argument."""
    get = attrgetter(path)
    if convert is None:

        def read(self: Any) -> Any:
            return get(self)

    else:

        def read(self: Any) -> Any:
            return convert(get(self))

    return computed_field(read, **options)


_LEAF = 0
_LEAF_LIST = 1
_TYPENAME = 2
_OBJECT = 3
_OBJECT_LIST = 4

_Plan = list["_Plain | None"]

#: Value types that are never null, an error or awaitable (exactly these, not subclasses).
_ORDINARY = frozenset({str, int, float, bool, datetime, UUID})


def install_lean_resolvers(schema: strawberry.Schema) -> int:
    """Give every field of ``schema`` whose resolver Strawberry made, and which needs none of
    that resolver's layers, the lean one (``executor_internals.lean_resolver``): the fields
    the plain path does not read itself run through it (root fields, loaders, fields with
    arguments). Subscription fields keep Strawberry's. Returns how many were given one."""
    core = graphql_schema(schema)
    given = 0
    for named in core.type_map.values():
        if not isinstance(named, GraphQLObjectType) or named is core.subscription_type:
            continue
        for field in named.fields.values():
            made_by = getattr(field.resolve, "__qualname__", "")
            definition = strawberry_definition(field)
            if definition is None or not made_by.startswith("GraphQLCoreConverter.from_resolver."):
                continue
            lean = lean_resolver(schema, definition)
            if lean is not None:
                field.resolve = lean
                given += 1
    return given


class _Slow(Exception):
    """Raised inside a plain subtree: the whole field goes through ``execute_field``."""


class _Plain:
    """How to produce one plain response key: ``read(source)``, then complete the value
    with ``coerce`` (leaves) or ``plan`` (objects). ``produce(source)`` does all that,
    made once for the plan (see :func:`_producer`)."""

    __slots__ = (
        "coerce", "is_type_of", "item_non_null", "kind", "non_null", "origin", "plan", "produce",
        "read", "response_key", "typename",
    )  # fmt: skip

    def __init__(
        self,
        response_key: str,
        kind: int,
        read: Callable[[Any], Any] = lambda _source: NOT_READ,
        *,
        typename: str = "",
        coerce: Callable[[Any], Any] = lambda value: value,
        plan: list[_Plain] | None = None,
        is_type_of: Callable[[Any, Any], Any] | None = None,
        origin: type | None = None,
        non_null: bool = False,
        item_non_null: bool = False,
    ) -> None:
        self.response_key = response_key
        self.kind = kind
        self.read = read
        self.typename = typename
        self.coerce = coerce
        self.plan = plan or []
        self.is_type_of = is_type_of
        self.origin = origin
        self.non_null = non_null
        self.item_non_null = item_non_null
        self.produce = _producer(self)


#: Types whose values are answered as they are by the scalar's output coercion, by its
#: coercion function (graphql-core's: a ``str`` is a String or an ID, a ``bool`` a Boolean).
_AS_THEY_ARE: dict[Callable[[Any], Any], frozenset[type]] = {
    GraphQLString.coerce_output_value: frozenset({str}),
    GraphQLID.coerce_output_value: frozenset({str}),
    GraphQLBoolean.coerce_output_value: frozenset({bool}),
}

#: Types none of whose values is an error, awaitable or a marker (``NOT_READ``,
#: ``Undefined``): seen once, then known by type.
_SETTLED_TYPES: set[type] = set(_ORDINARY)


def _settled(value: Any) -> bool:
    """Whether a non-null value can be completed as it is: not an error, an awaitable or
    a marker. By type once a type is known (an instance attribute ``__await__`` is not
    looked for: Python awaits by type)."""
    kind = type(value)
    if kind in _SETTLED_TYPES:
        return True
    if value is NOT_READ or value is Undefined or isinstance(value, Exception) or is_awaitable(value):
        return False
    if (
        kind is not object
        and not hasattr(kind, "__await__")
        and not issubclass(kind, BaseException | CoroutineType | GeneratorType)
    ):
        _SETTLED_TYPES.add(kind)
    return True


def _producer(plain: _Plain) -> Callable[[Any], Any]:
    """``plain.produce``: the field's completed value from its source, or ``_Slow`` when
    only ``execute_field`` may say (a null where the type forbids it, an error, an
    awaitable, a value the scalar does not serialise, an object of another type)."""
    kind = plain.kind
    if kind == _TYPENAME:
        typename = plain.typename
        return lambda _source: typename
    # The three producers below repeat their first lines (read, then null) inline: they
    # run once per value, and a shared helper would add a call to each.
    read = plain.read
    non_null = plain.non_null
    complete = _leaf_completer(plain.coerce) if kind in (_LEAF, _LEAF_LIST) else _object_completer(plain)
    if kind == _LEAF:
        as_they_are = _AS_THEY_ARE.get(plain.coerce, frozenset())

        def produce_leaf(source: Any) -> Any:
            try:
                value = read(source)
            except Exception:
                raise _Slow from None
            value_type = type(value)
            if value_type in as_they_are:
                return value
            if value_type in _ORDINARY:
                return complete(value)
            if value is None:
                if non_null:
                    raise _Slow
                return None
            if not _settled(value):
                raise _Slow
            return complete(value)

        return produce_leaf

    if kind == _OBJECT:

        def produce_object(source: Any) -> Any:
            try:
                value = read(source)
            except Exception:
                raise _Slow from None
            if value is None:
                if non_null:
                    raise _Slow
                return None
            if type(value) not in _SETTLED_TYPES and not _settled(value):
                raise _Slow
            return complete(value)

        return produce_object

    item_non_null = plain.item_non_null

    def produce_list(source: Any) -> Any:
        try:
            value = read(source)
        except Exception:
            raise _Slow from None
        if value is None:
            if non_null:
                raise _Slow
            return None
        if not _settled(value) or not isinstance(value, list | tuple):
            raise _Slow
        items: list[Any] = []
        append = items.append
        for item in value:
            if item is None:
                if item_non_null:
                    raise _Slow
                append(None)
            elif type(item) in _SETTLED_TYPES or _settled(item):
                append(complete(item))
            else:
                raise _Slow
        return items

    return produce_list


def _int_output(value: Any) -> Any:
    """graphql-core's Int output coercion, with an in-range ``int`` answered as it is."""
    if type(value) is int and GRAPHQL_MIN_INT <= value <= GRAPHQL_MAX_INT:
        return value
    return int_output(value)


#: Output coercions with a faster equivalent.
_FASTER: dict[Callable[[Any], Any], Callable[[Any], Any]] = {int_output: _int_output}


def _leaf_completer(coerce: Callable[[Any], Any]) -> Callable[[Any], Any]:
    as_they_are = _AS_THEY_ARE.get(coerce, frozenset())
    coerce = _FASTER.get(coerce, coerce)

    def complete(value: Any) -> Any:
        if type(value) in as_they_are:
            return value
        try:
            coerced = coerce(value)
        except Exception:
            raise _Slow from None
        if coerced is None or coerced is Undefined:
            raise _Slow
        return coerced

    return complete


def _object_completer(plain: _Plain) -> Callable[[Any], dict[str, Any]]:
    is_type_of = plain.is_type_of
    build = _dict_builder([(sub.response_key, sub.produce) for sub in plain.plan])
    if is_type_of is None:
        return build
    origin = plain.origin

    def complete(value: Any) -> dict[str, Any]:
        if type(value) is origin and TYPE_CAST_ATTRIBUTE not in value.__dict__:
            # What Strawberry's own check answers for an instance of the class itself
            # that is not cast to another type, without its attribute lookups.
            return build(value)
        # Strawberry's own ``is_type_of`` is an isinstance check that ignores ``info``.
        try:
            matches = is_type_of(value, None)
        except Exception:
            raise _Slow from None
        if matches is not True:
            raise _Slow
        return build(value)

    return complete


#: ``make(k0, p0, k1, p1, ...) -> build`` by number of fields, compiled once per count.
_BUILDER_MAKERS: dict[int, Callable[..., Callable[[Any], dict[str, Any]]]] = {}


def _dict_builder(fields: list[tuple[str, Callable[[Any], Any]]]) -> Callable[[Any], dict[str, Any]]:
    """``value -> {key: produce(value), ...}`` for the given fields, in their order, as one
    dict display (cheaper per object than a comprehension over the pairs: ``bench/NOTES.md``). The
    code for each number of fields is compiled once; a plan only binds its keys and
    producers (plans of operations whose fields depend on variables are made per request)."""
    count = len(fields)
    make = _BUILDER_MAKERS.get(count)
    if make is None:
        names = [f"k{n}, p{n}" for n in range(count)]
        entries = [f"k{n}: p{n}(value)" for n in range(count)]
        namespace: dict[str, Any] = {}
        exec(
            f"def make({', '.join(names)}):\n"
            f"    def build(value):\n"
            f"        return {{{', '.join(entries)}}}\n"
            f"    return build",
            namespace,
        )
        make = _BUILDER_MAKERS[count] = namespace["make"]
    return make(*(part for field in fields for part in field))


_SharedPlans = dict[tuple[Any, ...], "_Plan | None"]

#: Plans kept across requests, per (schema, operation) of a parsed document; None for an
#: operation whose selections depend on its variables. Least recently used first.
_SHARED: OrderedDict[tuple[int, int], tuple[GraphQLSchema, OperationDefinitionNode, _SharedPlans | None]]
_SHARED = OrderedDict()

#: Operations whose plans are kept (Strawberry's parser cache keeps as many documents).
SHARED_OPERATIONS = 1000


def _shared_plans(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
) -> _SharedPlans | None:
    key = (id(schema), id(operation))
    entry = _SHARED.get(key)
    if entry is not None and entry[0] is schema and entry[1] is operation:
        _SHARED.move_to_end(key)
        return entry[2]
    plans: _SharedPlans | None = {} if _variable_free(operation, fragments) else None
    _SHARED[key] = (schema, operation, plans)
    if len(_SHARED) > SHARED_OPERATIONS:
        _SHARED.popitem(last=False)
    return plans


def _variable_free(operation: OperationDefinitionNode, fragments: dict[str, FragmentDefinitionNode]) -> bool:
    """Whether the fields each selection set collects are the same whatever the variables."""
    if any(fragment.variable_definitions for fragment in fragments.values()):
        return False
    pending: list[SelectionSetNode | None] = [operation.selection_set]
    pending.extend(fragment.selection_set for fragment in fragments.values())
    while pending:
        selection_set = pending.pop()
        if selection_set is None:
            continue
        for selection in selection_set.selections:
            if getattr(selection, "arguments", None) and selection.kind == "fragment_spread":
                return False
            for directive in selection.directives or ():
                name = directive.name.value
                if name in ("defer", "stream"):
                    return False
                if name in ("skip", "include") and any(
                    isinstance(argument.value, VariableNode) for argument in directive.arguments or ()
                ):
                    return False
            pending.append(getattr(selection, "selection_set", None))
    return True


def _checked_origin(object_type: GraphQLObjectType) -> type | None:
    """The class whose own instances, unless cast, Strawberry's ``is_type_of`` of the type
    accepts (the type's own check, not one the class defines); None when unknown."""
    definition = strawberry_definition(object_type)
    if definition is None or definition.is_type_of is not None:
        return None
    origin = definition.origin
    if not isinstance(origin, type) or not origin.__dictoffset__ or hasattr(origin, TYPE_CAST_ATTRIBUTE):
        return None
    return origin


def _unwrapped(output: GraphQLOutputType) -> tuple[GraphQLOutputType, bool]:
    if isinstance(output, GraphQLNonNull):
        return output.of_type, True
    return output, False


def _is_introspection(details: FieldDetailsList) -> bool:
    return details[0].node.name.value in ("__schema", "__type")


def _gather(values: Sequence[Awaitable[Any]]) -> Awaitable[list[Any]]:
    """graphql-core's ``gather_async_work``, which reads nothing of its executor."""
    return gather_with_cancel(*values)


def _track(executor: weakref.ref[StrawberryExecutor], values: Sequence[Any]) -> None:
    """graphql-core's ``track_async_work`` of ``executor``, while it runs."""
    alive = executor()
    if alive is None:
        raise RuntimeError("this operation's execution has finished")
    track_async_work(alive, values)


def _helpers_of(executor: StrawberryExecutor) -> GraphQLResolveInfoHelpers:
    """Resolver-info helpers that hold ``executor`` weakly: graphql-core's are its bound
    methods, which it holds, a reference cycle."""
    return GraphQLResolveInfoHelpers(gather=_gather, track=partial(_track, weakref.ref(executor)))


class PlainFieldsExecutor(StrawberryExecutor):
    """Strawberry's executor, with plain fields of a selection set produced in place.

    Its resolver-info helpers hold it weakly. graphql-core's are methods of the
    executor, which holds them: that reference cycle kept the whole request (context,
    loaders, futures, records: about 200 objects for a page of posts) alive until
    the cyclic garbage collector found it, and so a live delivery's execution, and a
    subscription's, and a request cancelled before its response was built."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.async_helpers = _helpers_of(self)
        self._plans: dict[int, tuple[GroupedFieldSet, _Plan | None]] = {}
        self._shared = _shared_plans(self.schema, self.operation, self.fragment_definitions)
        self._plain_allowed = not runs_middleware(self)

    def execute_root_grouped_field_set(
        self,
        root_type: GraphQLObjectType,
        root_value: Any,
        grouped_field_set: GroupedFieldSet,
        serially: bool,
        position_context: Any,
    ) -> Any:
        """A query's ``__schema`` and ``__type`` fields are resolved on a worker thread.

        Introspection is answered from the schema in memory by synchronous resolvers:
        graphql-core would hold the event loop for all of it (tens of milliseconds for
        GraphiQL's query, ``bench/NOTES.md``; the cost limit admits about ten of them in
        one request). On a thread
        the loop keeps serving other requests meanwhile. The other root fields run
        on the loop once the thread is done, so the executor is never used by two
        threads at once; the response keeps the selection's order."""
        introspection = (
            None
            if serially or position_context is not None
            else [key for key, details in grouped_field_set.items() if _is_introspection(details)]
        )
        if not introspection:
            return super().execute_root_grouped_field_set(
                root_type, root_value, grouped_field_set, serially, position_context
            )
        return self._introspection_off_loop(root_type, root_value, grouped_field_set, introspection)

    async def _introspection_off_loop(
        self,
        root_type: GraphQLObjectType,
        root_value: Any,
        grouped_field_set: GroupedFieldSet,
        introspection: list[str],
    ) -> dict[str, Any]:
        execute = super().execute_root_grouped_field_set
        asked = {key: grouped_field_set[key] for key in introspection}
        answered: Any = await asyncio.to_thread(execute, root_type, root_value, asked, False, None)
        if self.is_awaitable(answered):  # a resolver hook made it asynchronous: finish it here
            answered = await answered
        rest = {key: details for key, details in grouped_field_set.items() if key not in asked}
        if rest:
            other = execute(root_type, root_value, rest, False, None)
            answered.update(await other if self.is_awaitable(other) else other)
        return {key: answered[key] for key in grouped_field_set if key in answered}

    def _plan_of(self, parent_type: GraphQLObjectType, grouped_field_set: GroupedFieldSet) -> _Plan | None:
        """The selection set's plan, made once per request; None when nothing in it is plain.

        Keyed by identity: graphql-core memoises the grouped field set of each selection
        for the request, and the entry holds it, so its id is not reused meanwhile."""
        key = id(grouped_field_set)
        cached = self._plans.get(key)
        if cached is None or cached[0] is not grouped_field_set:
            shared = self._shared
            if shared is None:
                plan = self._new_plan(parent_type, grouped_field_set)
            else:
                # The same fields of the same document: the same plan.
                nodes = [id(detail.node) for details in grouped_field_set.values() for detail in details]
                shared_key = (parent_type.name, *nodes)
                if shared_key in shared:
                    plan = shared[shared_key]
                else:
                    plan = shared[shared_key] = self._new_plan(parent_type, grouped_field_set)
            cached = self._plans[key] = (grouped_field_set, plan)
        return cached[1]

    def _new_plan(self, parent_type: GraphQLObjectType, grouped_field_set: GroupedFieldSet) -> _Plan | None:
        plan: _Plan = [self._plain(parent_type, key, details) for key, details in grouped_field_set.items()]
        return plan if any(plan) else None

    def _whole_plan(self, object_type: GraphQLObjectType, details: FieldDetailsList) -> list[_Plain] | None:
        """The plan of an object field's selection when every field in it is plain."""
        grouped_field_set, defers = subfields(self, object_type, details)
        if defers:
            return None
        plan = self._plan_of(object_type, grouped_field_set) or []
        whole = [plain for plain in plan if plain is not None]
        return whole if whole and len(whole) == len(plan) else None

    def _reader(self, field_def: Any) -> Callable[[Any], Any] | None:
        """How to read a field's value without its resolver, if there is a way."""
        strawberry_field = strawberry_definition(field_def)
        if strawberry_field is None or strawberry_field.extensions:
            return None
        resolve = field_def.resolve
        if resolve is not None and is_basic_resolver(resolve):
            if not strawberry_field.is_basic_field:
                return None
            default_resolver = strawberry_field.default_resolver
            name = strawberry_field.python_name
            if default_resolver is getattr:
                return attrgetter(name)
            return lambda source: default_resolver(source, name)
        read: Callable[[Any], Any] | None = (strawberry_field.metadata or {}).get(PLAIN_READER)
        return read

    def _plain(
        self, parent_type: GraphQLObjectType, response_key: str, details: FieldDetailsList
    ) -> _Plain | None:
        for detail in details:
            node = detail.node
            if detail.defer_usage is not None or detail.fragment_variable_values is not None:
                return None
            if node.arguments or node.directives:
                return None
        field_name = details[0].node.name.value
        if field_name == "__typename":
            return _Plain(response_key, _TYPENAME, typename=parent_type.name)
        field_def = self.schema.get_field(parent_type, field_name)
        if field_def is None or field_def.args:
            return None
        read = self._reader(field_def)
        if read is None:
            return None
        inner, non_null = _unwrapped(field_def.type)
        kind = _LEAF
        item_non_null = False
        if isinstance(inner, GraphQLList):
            kind = _LEAF_LIST
            inner, item_non_null = _unwrapped(inner.of_type)
        if isinstance(inner, GraphQLScalarType | GraphQLEnumType):
            if details[0].node.selection_set:
                return None
            return _Plain(
                response_key, kind, read, coerce=inner.coerce_output_value, non_null=non_null,
                item_non_null=item_non_null,
            )  # fmt: skip
        if isinstance(inner, GraphQLObjectType):
            plan = self._whole_plan(inner, details)
            if plan is None:
                return None
            return _Plain(
                response_key, _OBJECT if kind == _LEAF else _OBJECT_LIST, read, plan=plan,
                is_type_of=inner.is_type_of, origin=_checked_origin(inner), non_null=non_null,
                item_non_null=item_non_null,
            )  # fmt: skip
        return None

    def execute_fields(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: GroupedFieldSet,
        position_context: Any,
    ) -> Any:
        plan = self._plan_of(parent_type, grouped_field_set) if self._plain_allowed else None
        if not plan:
            return super().execute_fields(
                parent_type, source_value, path, grouped_field_set, position_context
            )

        results: dict[str, Any] = {}
        is_awaitable = self.is_awaitable
        awaitable_fields: list[str] = []
        try:
            for plain, (response_name, field_details_list) in zip(
                plan, grouped_field_set.items(), strict=True
            ):
                if plain is not None:
                    try:
                        results[response_name] = plain.produce(source_value)
                        continue
                    except _Slow:
                        pass
                field_path = Path(path, response_name, parent_type.name)
                result = self.execute_field(
                    parent_type, source_value, field_details_list, field_path, position_context
                )
                if result is not Undefined:
                    results[response_name] = result
                    if is_awaitable(result):
                        awaitable_fields.append(response_name)
        except Exception:
            if awaitable_fields:
                settle_in_background(self, [results[field] for field in awaitable_fields])
            raise
        if not awaitable_fields:
            return results
        return self._gather(results, awaitable_fields)

    async def _gather(self, results: dict[str, Any], awaitable_fields: list[str]) -> dict[str, Any]:
        """graphql-core's ``execute_fields`` ending: await the fields that returned awaitables."""
        if len(awaitable_fields) == 1:
            field = awaitable_fields[0]
            results[field] = await results[field]
        else:
            awaited = await gather_with_cancel(*(results[field] for field in awaitable_fields))
            results.update(zip(awaitable_fields, awaited, strict=True))
        return results
