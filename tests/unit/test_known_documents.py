"""The known-documents lane (``executor_internals.KnownDocuments``): a document the schema has
run before answers exactly as through Strawberry's own ``execute`` (data, errors with their
codes, paths and extensions, ``extensions``), without being parsed again; a document that
failed to parse, to stay within the token limit or to validate is never known, and the
known ones are bounded."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from strawberry.types.graphql import OperationType

from gateway.graph import hooks
from gateway.graph.parser_cache import GuardedParserCache
from gateway.schema import build_schema
from gateway.settings import Settings

SETTINGS = replace(Settings(), query_metrics=True, max_tokens=60)

PAGES = "query($n: Int!) { posts(first: $n) { edges { node { comments(first: $n) { nodes { text } } } } } }"

#: (document, variables, operation name): none reads Cassandra.
CORPUS: list[tuple[str, dict[str, Any] | None, str | None]] = [
    ("{ __typename }", None, None),
    ("query Named { a: __typename b: __typename }", None, None),
    ("query One { __typename } query Two { t: __typename }", None, "Two"),
    ("query One { __typename } query Two { t: __typename }", None, "One"),
    ("query One { __typename } query Two { t: __typename }", None, None),  # no operation named
    ("query($id: ID!) { node(id: $id) { __typename } }", {"id": "not a global id"}, None),
    ("query($id: ID!) { node(id: $id) { __typename } }", {"id": 12}, None),  # coerced to an ID
    ("query($id: ID!) { node(id: $id) { __typename } }", {}, None),  # a variable missing
    ("query($id: ID!) { node(id: $id) { __typename } }", {"id": ["a"]}, None),  # not an ID
    ('{ __schema { queryType { name } } __type(name: "User") { name kind } }', None, None),
    # Valid whatever the variables, within the cost limit or not depending on them.
    (PAGES, {"n": -1}, None),
    (PAGES, {"n": 100}, None),
    ("{ nope }", None, None),  # does not validate
    ("query($unused: Int) { __typename }", None, None),  # does not validate
    ("{ __typename", None, None),  # does not parse
    ("{ " + "a: __typename " * 40 + "}", None, None),  # over the token limit
    ("mutation { __typename }", None, None),
    ("subscription { __typename }", None, None),
    # Operation names of other JSON types, as a client may send them.
    ("query One { __typename } query Two { t: __typename }", None, {"name": "Two"}),  # type: ignore[list-item]
    ("query One { __typename } query Two { t: __typename }", None, ["One"]),  # type: ignore[list-item]
    ("{ __typename }", None, 7),  # type: ignore[list-item]
]


def _shape(result: Any) -> Any:
    errors = [
        (
            error.message,
            error.path,
            error.extensions,
            [(loc.line, loc.column) for loc in error.locations or ()],
        )
        for error in result.errors or ()
    ]
    return result.data, errors, result.extensions


async def _run(schema: Any, query: str, variables: Any, name: str | None, **kwargs: Any) -> Any:
    try:
        return _shape(await schema.execute(query, variable_values=variables, operation_name=name, **kwargs))
    except Exception as error:  # raised, not answered: Strawberry's refusals of an operation type
        return ("raised", type(error).__name__, str(error))


async def test_known_documents_answer_as_strawberrys_execute() -> None:
    lane: Any = build_schema(SETTINGS, plain_fields=True)
    stock: Any = build_schema(SETTINGS, plain_fields=False)
    assert lane._known_limit and not stock._known_limit
    for round_ in (1, 2, 3):  # the first learns, the later ones take the lane
        for query, variables, name in CORPUS:
            got = await _run(lane, query, variables, name)
            want = await _run(stock, query, variables, name)
            assert got == want, (round_, query, variables, name)
    known = {key for key in lane._known}
    assert ("{ __typename }", None) in known
    assert ("query One { __typename } query Two { t: __typename }", "Two") in known
    assert (
        "query($id: ID!) { node(id: $id) { __typename } }",
        None,
    ) in known  # validated, whatever the variables
    assert (PAGES, None) in known
    for refused in ("{ nope }", "query($unused: Int) { __typename }", "{ __typename", CORPUS[15][0]):
        assert (refused, None) not in known
    assert not stock._known


async def test_a_known_mutation_is_refused_where_only_queries_run() -> None:
    """As a GET request: the lane runs a known document only as an operation of its type."""
    lane: Any = build_schema(SETTINGS, plain_fields=True)
    stock: Any = build_schema(SETTINGS, plain_fields=False)
    query = "mutation { __typename }"
    assert (await _run(lane, query, None, None))[0] == {"__typename": "Mutation"}
    queries_only = {"allowed_operation_types": {OperationType.QUERY}}
    got = await _run(lane, query, None, None, **queries_only)
    assert got == await _run(stock, query, None, None, **queries_only)
    assert got[0] == "raised" and got[1] == "InvalidOperationTypeError"


async def test_a_known_document_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    lane: Any = build_schema(SETTINGS, plain_fields=True)
    parses: list[str] = []
    on_parse = GuardedParserCache.on_parse

    def counted(self: GuardedParserCache) -> Iterator[None]:
        parses.append(self.execution_context.query or "")
        yield from on_parse(self)

    monkeypatch.setattr(GuardedParserCache, "on_parse", counted)
    # The runner tells each class's hooks once: it is told again here.
    monkeypatch.setattr(hooks, "_HOOKS", {})
    monkeypatch.setattr(hooks, "_PLANS", {})
    for _ in range(3):
        assert (await lane.execute("{ __typename }")).data == {"__typename": "Query"}
        assert (await lane.execute("{ nope }")).errors
    assert parses == ["{ __typename }", "{ nope }", "{ nope }", "{ nope }"]


async def test_known_documents_are_bounded_the_least_recently_used_forgotten() -> None:
    lane: Any = build_schema(SETTINGS, plain_fields=True)
    lane._known_limit = 3
    for n in range(3):
        await lane.execute(f"{{ a{n}: __typename }}")
    await lane.execute("{ a0: __typename }")  # used again: the newest
    await lane.execute("{ a3: __typename }")
    assert [query for query, _ in lane._known] == [
        "{ a2: __typename }",
        "{ a0: __typename }",
        "{ a3: __typename }",
    ]
