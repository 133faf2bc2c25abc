"""Execution with a fast path for plain fields: attributes read and serialised in place.

graphql-core runs every field the same way: a ``Path``, a ``GraphQLResolveInfo``
(built by Strawberry), the resolver, an awaitable check and ``complete_value``'s
type dispatch. For a field that is only an attribute of its parent (a Strawberry
field with no resolver, no arguments and no extensions) whose type is a scalar
or an enum (or a list of them), all of that amounts to ``getattr`` and the
type's ``coerce_output_value``; a page of 50 records has hundreds of them.

:class:`PlainFieldsExecutor` plans each selection set once per request: which
of its response keys are plain, and how to read and serialise them. Executing
the set, a plain field whose value is an ordinary one (not null where the type
forbids it, not an exception or an awaitable, serialised to a value) is written
directly; anything else, and every other field, goes through graphql-core's own
``execute_field``, which reads the attribute again (reading has no side effect)
and produces exactly the value or the error it always did. Results keep the
selection's order. ``tests/test_plain_fields.py`` holds the fast path to the
reference executor, byte for byte, over a corpus of queries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    Undefined,
)
from graphql.execution.collect_fields import GroupedFieldSet
from graphql.pyutils import Path, gather_with_cancel
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

#: Strawberry keeps a field's own definition in its graphql-core field's extensions.
_STRAWBERRY_DEFINITION = "strawberry-definition"

#: The name of the resolver Strawberry gives fields without one (``is_basic_field``).
_BASIC_RESOLVER = "_get_basic_result"

_LEAF = 0
_LEAF_LIST = 1
_TYPENAME = 2


class _Plain:
    """How to produce one plain response key: read ``name`` with ``read``, then coerce."""

    __slots__ = ("coerce", "item_non_null", "kind", "name", "non_null", "read", "response_key")

    def __init__(
        self,
        response_key: str,
        kind: int,
        read: Callable[[Any, str], Any] | None = None,
        name: str = "",
        coerce: Callable[[Any], Any] | None = None,
        non_null: bool = False,
        item_non_null: bool = False,
    ) -> None:
        self.response_key = response_key
        self.kind = kind
        self.read = read
        self.name = name
        self.coerce = coerce
        self.non_null = non_null
        self.item_non_null = item_non_null


_Plan = list[_Plain | None]

#: A value the fast path does not produce: the field goes through ``execute_field``.
_SLOW = object()


def _leaf(output: GraphQLOutputType) -> tuple[Callable[[Any], Any] | None, bool]:
    """The coercion of a scalar or enum type, and whether it is non-null."""
    non_null = isinstance(output, GraphQLNonNull)
    inner = output.of_type if isinstance(output, GraphQLNonNull) else output
    if isinstance(inner, GraphQLScalarType | GraphQLEnumType):
        return inner.coerce_output_value, non_null
    return None, non_null


class PlainFieldsExecutor(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's executor, with plain fields of a selection set produced in place."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plans: dict[int, tuple[GroupedFieldSet, _Plan | None]] = {}
        manager = self.middleware_manager
        self._plain_allowed = manager is None or manager._middleware_resolvers is None

    def _plan_of(self, parent_type: GraphQLObjectType, grouped_field_set: GroupedFieldSet) -> _Plan | None:
        """The selection set's plan, made once per request; None when nothing in it is plain.

        Keyed by identity: graphql-core memoises the grouped field set of each selection
        for the request, and the entry holds it, so its id is not reused meanwhile."""
        key = id(grouped_field_set)
        cached = self._plans.get(key)
        if cached is None or cached[0] is not grouped_field_set:
            plan: _Plan | None = [
                self._plain(parent_type, response_key, details)
                for response_key, details in grouped_field_set.items()
            ]
            if not any(plan or ()):
                plan = None
            cached = self._plans[key] = (grouped_field_set, plan)
        return cached[1]

    def _plain(self, parent_type: GraphQLObjectType, response_key: str, details: Any) -> _Plain | None:
        for detail in details:
            node = detail.node
            if detail.defer_usage is not None or detail.fragment_variable_values is not None:
                return None
            if node.arguments or node.directives or node.selection_set:
                return None
        field_name = details[0].node.name.value
        if field_name == "__typename":
            return _Plain(response_key, _TYPENAME, name=parent_type.name)
        field_def = self.schema.get_field(parent_type, field_name)
        if field_def is None or field_def.args:
            return None
        resolve = field_def.resolve
        if resolve is None or getattr(resolve, "__name__", "") != _BASIC_RESOLVER:
            return None
        strawberry_field = (field_def.extensions or {}).get(_STRAWBERRY_DEFINITION)
        if strawberry_field is None or not strawberry_field.is_basic_field:
            return None
        read = strawberry_field.default_resolver
        name = strawberry_field.python_name
        output = field_def.type
        coerce, non_null = _leaf(output)
        if coerce is not None:
            return _Plain(response_key, _LEAF, read, name, coerce, non_null)
        inner = output.of_type if isinstance(output, GraphQLNonNull) else output
        if isinstance(inner, GraphQLList):
            coerce, item_non_null = _leaf(inner.of_type)
            if coerce is not None:
                return _Plain(response_key, _LEAF_LIST, read, name, coerce, non_null, item_non_null)
        return None

    def _value(self, plain: _Plain, source: Any) -> Any:
        """The field's completed value, or ``_SLOW`` when only ``execute_field`` may say."""
        if plain.kind == _TYPENAME:
            return plain.name
        assert plain.read is not None and plain.coerce is not None
        try:
            value = plain.read(source, plain.name)
        except Exception:
            return _SLOW
        if value is None:
            return _SLOW if plain.non_null else None
        if value is Undefined or isinstance(value, Exception) or self.is_awaitable(value):
            return _SLOW
        coerce = plain.coerce
        if plain.kind == _LEAF:
            return self._coerced(coerce, value)
        if not isinstance(value, list | tuple):
            return _SLOW
        items: list[Any] = []
        for item in value:
            if item is None:
                if plain.item_non_null:
                    return _SLOW
                items.append(None)
                continue
            if item is Undefined or isinstance(item, Exception) or self.is_awaitable(item):
                return _SLOW
            coerced = self._coerced(coerce, item)
            if coerced is _SLOW:
                return _SLOW
            items.append(coerced)
        return items

    @staticmethod
    def _coerced(coerce: Callable[[Any], Any], value: Any) -> Any:
        try:
            coerced = coerce(value)
        except Exception:
            return _SLOW
        if coerced is None or coerced is Undefined:
            return _SLOW
        return coerced

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
                    value = self._value(plain, source_value)
                    if value is not _SLOW:
                        results[response_name] = value
                        continue
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
                self.settle_in_background([results[field] for field in awaitable_fields])
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
