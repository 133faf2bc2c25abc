"""Introspection is costed exactly, within the budget, and resolved off the event loop.

No Cassandra: the schema is built in process and introspection is answered from
it, so what the cost walk predicts is compared with what graphql-core resolves.
"""

from __future__ import annotations

import inspect
import threading
from dataclasses import replace
from typing import Any

import pytest
from graphql import (
    ArgumentNode,
    BooleanValueNode,
    ExecutionResult,
    FieldNode,
    NameNode,
    Visitor,
    execute_sync,
    experimental_execute_incrementally,
    get_introspection_query,
    parse,
    visit,
)

from gateway.graph.cost import analyse
from gateway.graph.plain_fields import PlainFieldsExecutor
from gateway.schema import build_schema
from gateway.settings import Settings

SCHEMA = build_schema(Settings())._schema
FULL = get_introspection_query(
    descriptions=True,
    specified_by_url=True,
    directive_is_repeatable=True,
    schema_description=True,
    input_value_deprecation=True,
)
FIELDS = (
    "__schema { types { name kind fields(includeDeprecated: true) { name args { name type { name kind"
    " ofType { name kind } } } type { name kind ofType { name kind ofType { name } } } } } }"
)


def resolved_fields(value: Any) -> int:
    """How many fields a result holds: what introspection's cost counts."""
    if isinstance(value, dict):
        return sum(1 + resolved_fields(item) for item in value.values())
    if isinstance(value, list):
        return sum(resolved_fields(item) for item in value)
    return 0


@pytest.mark.parametrize(
    "query",
    [
        FULL,
        "{ " + FIELDS + " }",
        '{ __type(name: "Query") { name fields { name args { name } } } }',
        '{ __type(name: "User") { name interfaces { name } fields { name type { ofType { name } } } } }',
        '{ __type(name: "Node") { possibleTypes { name fields { name } } } }',
        '{ __type(name: "NoSuchType") { name fields { name } } }',
        "{ __schema { directives { name locations args { name type { kind } } } } }",
        "{ __schema { queryType { name } mutationType { name } subscriptionType { name } } }",
        "{ __schema { types { enumValues { name } inputFields { name defaultValue } } } }",
        "{ a: __schema { types { name } } b: __schema { types { name } } }",
        "query { __schema { ...T } } fragment T on __Schema { types { ...N } } fragment N on __Type { name }",
    ],
)
def test_the_cost_of_introspection_is_the_number_of_fields_it_resolves(query: str) -> None:
    """Exactly, with deprecated fields and arguments listed; the cost does not read
    ``includeDeprecated``, so without them it is an upper bound (``DirectMessage.conversationId``
    is deprecated)."""
    document = parse(query)
    listing_deprecated = visit(document, _IncludeDeprecated())
    result = execute_sync(SCHEMA, listing_deprecated)
    assert result.errors is None, result.errors
    assert analyse(SCHEMA, document).cost == resolved_fields(result.data)
    assert analyse(SCHEMA, listing_deprecated).cost == resolved_fields(result.data)
    as_asked = execute_sync(SCHEMA, document)
    assert as_asked.errors is None, as_asked.errors
    assert resolved_fields(as_asked.data) <= resolved_fields(result.data)


class _IncludeDeprecated(Visitor):
    """Asks every introspection list that can leave deprecated items out to list them."""

    def enter_field(self, node: FieldNode, *_: Any) -> FieldNode | None:
        if node.name.value not in ("fields", "enumValues", "args", "inputFields"):
            return None
        arguments = [a for a in node.arguments or () if a.name.value != "includeDeprecated"]
        flag = ArgumentNode(name=NameNode(value="includeDeprecated"), value=BooleanValueNode(value=True))
        return replace(node, arguments=(*arguments, flag))


def test_a_type_named_by_a_variable_is_costed_with_its_value() -> None:
    document = parse("query($t: String!) { __type(name: $t) { fields { name } } }")
    query_fields = len(SCHEMA.query_type.fields)  # type: ignore[union-attr]
    analysis = analyse(SCHEMA, document, {"t": "Query"})
    assert analysis.cost == 2 + query_fields
    assert "t" in analysis.variables  # the remembered measures are keyed by its value
    assert analyse(SCHEMA, document, {"t": "NoSuchType"}).cost == 1


def test_every_alias_is_costed_again() -> None:
    one = analyse(SCHEMA, parse("{ " + FIELDS + " }")).cost
    aliased = "{ " + " ".join(f"a{n}: {FIELDS}" for n in range(20)) + " }"
    assert analyse(SCHEMA, parse(aliased)).cost == 20 * one
    assert 20 * one > Settings().max_cost


def test_counting_stops_once_past_the_budget() -> None:
    """Past the budget the walk reports a cost over it without counting the rest: each
    later alias counts as one field. Aliases that differ deep inside share nothing."""
    aliased = parse(
        "{ "
        + " ".join(
            f"a{n}: {FIELDS.replace('args { name', 'args { name ' + 'description ' * n)}" for n in range(10)
        )
        + " }"
    )
    exact = analyse(SCHEMA, aliased).cost
    for budget in (100, 5000):
        cost = analyse(SCHEMA, aliased, budget=budget).cost
        assert budget < cost <= budget + 10 < exact


def test_selections_of_one_shape_are_counted_once_and_cost_each_time() -> None:
    one = analyse(SCHEMA, parse("{ " + FIELDS + " }")).cost
    twice = "{ a: " + FIELDS + " b: " + FIELDS.replace("{ name", "{ n: name", 1) + " }"
    assert analyse(SCHEMA, parse(twice)).cost == 2 * one


def test_graphiql_sized_introspection_fits_the_default_cost_about_ten_times() -> None:
    cost = analyse(SCHEMA, parse(FULL)).cost
    assert 1000 < cost < Settings().max_cost // 8


async def test_introspection_is_resolved_on_a_worker_thread_and_other_fields_on_the_loop() -> None:
    loop_thread = threading.get_ident()
    threads: dict[str, int] = {}

    def record(next_: Any, root: Any, info: Any, **args: Any) -> Any:
        if info.path.prev is None:  # a root field
            threads[info.field_name] = threading.get_ident()
        return next_(root, info, **args)

    document = parse('{ __typename __schema { queryType { name } } t: __type(name: "User") { name } }')
    # The schema holds @defer and @stream: graphql-core runs it with the incremental executor,
    # which answers a document without them as ``execute`` would.
    result = experimental_execute_incrementally(
        SCHEMA, document, executor_class=PlainFieldsExecutor, middleware=[record]
    )
    assert not isinstance(result, ExecutionResult), "introspection is awaited, off the loop"
    assert inspect.isawaitable(result)
    answered = await result
    assert isinstance(answered, ExecutionResult)
    assert answered.errors is None and answered.data is not None
    assert list(answered.data) == ["__typename", "__schema", "t"]  # the selection's order
    assert answered.data["t"] == {"name": "User"}
    assert threads["__typename"] == loop_thread
    assert threads["__schema"] != loop_thread
    assert threads["__type"] != loop_thread
