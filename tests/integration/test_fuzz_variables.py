"""Fuzzing variables: every root field with arguments, its arguments sent as variables whose
values hypothesis draws from their declared types (strings of any Unicode, integers past 32
bits, floats at their extremes, enums and input objects with fields left out or unknown,
lists where one value belongs) or from no type at all (any JSON, nested, null).

Documents are fixed and valid, so everything lands on variable coercion and on the
resolvers' own rules; ``tests/integration/test_fuzz.py`` varies the documents. Whatever the values,
the gateway must answer below 500, never with ``INTERNAL_SERVER_ERROR``, give every error a
code, within ``HANG_GUARD`` seconds, and write no traceback or error to its log.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import graphql
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from tests.support.client import Api
from tests.support.fuzz.budget import HANG_GUARD, Budget
from tests.support.fuzz.problems import problems_of
from tests.support.fuzz.watch import watching

SCHEMA = graphql.build_schema((Path(__file__).resolve().parents[2] / "schema.graphql").read_text())
#: Variable sets per root field inside ``scripts/test``.
BRIEF_PER_FIELD = 4

JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "String": st.text(max_size=300) | st.sampled_from(["", " ", "\u0000", "\ud800", "a" * 5000, "é" * 10]),
    "ID": st.text(max_size=60)
    | st.sampled_from(["", "VXNlcjphbGljZQ==", "00000000-0000-1000-8000-000000000000"]),
    "Int": st.integers(min_value=-(2**40), max_value=2**40)
    | st.sampled_from([0, -1, 100, 101, 2**31, 2**63]),
    "Float": st.floats(allow_nan=False, allow_infinity=False),
    "Boolean": st.booleans(),
    "DateTime": st.sampled_from(["2026-01-01T00:00:00Z", "2026-13-45T99:99:99Z", "yesterday", ""]),
    "Upload": st.none(),
}


def typed(kind: graphql.GraphQLInputType, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of ``kind``, with some that are not quite (null where it is required, a lone
    value where a list belongs, an unknown field)."""
    if isinstance(kind, graphql.GraphQLNonNull):
        inner = typed(kind.of_type, depth)
        return inner | st.none() if depth == 0 else inner
    if isinstance(kind, graphql.GraphQLList):
        item = typed(kind.of_type, depth + 1)
        return st.lists(item, max_size=5) | item
    if isinstance(kind, graphql.GraphQLEnumType):
        return st.sampled_from(list(kind.values)) | st.text(max_size=10)
    if isinstance(kind, graphql.GraphQLInputObjectType):
        if depth > 3:
            return st.just({})
        required = {
            name: typed(field.type, depth + 1)
            for name, field in kind.fields.items()
            if isinstance(field.type, graphql.GraphQLNonNull)
        }
        optional = {
            name: typed(field.type, depth + 1)
            for name, field in kind.fields.items()
            if not isinstance(field.type, graphql.GraphQLNonNull)
        }
        objects = st.fixed_dictionaries(required, optional=optional)
        return objects | objects.map(lambda value: {**value, "unknownField": 1})
    assert isinstance(kind, graphql.GraphQLScalarType)
    return SCALARS.get(kind.name, JSON)


def operations() -> list[tuple[str, str, dict[str, st.SearchStrategy[Any]]]]:
    """(field, document, strategy per variable) for every root field that takes arguments."""
    found = []
    for keyword, root in (("query", SCHEMA.query_type), ("mutation", SCHEMA.mutation_type)):
        assert root is not None
        for name, field in root.fields.items():
            if not field.args:
                continue
            definitions = ", ".join(f"${arg}: {field.args[arg].type}" for arg in field.args)
            arguments = ", ".join(f"{arg}: ${arg}" for arg in field.args)
            output = graphql.get_named_type(field.type)
            selection = (
                " { __typename }"
                if isinstance(output, graphql.GraphQLObjectType | graphql.GraphQLInterfaceType)
                else ""
            )
            document = f"{keyword} Fuzz({definitions}) {{ {name}({arguments}){selection} }}"
            strategies = {arg: typed(field.args[arg].type) | JSON for arg in field.args}
            found.append((name, document, strategies))
    return found


def draw(
    strategies: dict[str, st.SearchStrategy[Any]], count: int, budget: Budget, round_: int
) -> list[dict[str, Any]]:
    """``count`` variable sets (fewer when they repeat), reproducible from the budget's seed."""
    drawn: list[dict[str, Any]] = []
    strategy = st.fixed_dictionaries(strategies, optional={}) | st.dictionaries(
        st.sampled_from(list(strategies)), JSON
    )

    @hypothesis_seed(budget.seed + round_)
    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(variables: dict[str, Any]) -> None:
        if variables not in drawn:
            drawn.append(variables)

    collect()
    return drawn[:count]


async def test_fuzzed_variables_never_fail_the_server(api: Api) -> None:
    account = await api.sign_up("fuzzvars")
    other = await api.sign_up("fuzzvarsb")
    budget = Budget(brief=1)
    fields = operations()
    assert len(fields) > 20
    sent = 0
    failures: list[str] = []
    codes: Counter[str] = Counter()
    round_ = 0
    with watching() as log:
        async with aiohttp.ClientSession() as http:
            while budget.more() and len(failures) < 20:
                for name, document, strategies in fields:
                    per_field = BRIEF_PER_FIELD if not budget.long else 20
                    for variables in draw(strategies, per_field, budget, round_):
                        headers = {"Authorization": f"Bearer {account.token}"}
                        payload = {"query": document, "variables": variables}
                        try:
                            async with (
                                asyncio.timeout(HANG_GUARD),
                                http.post(api.url, json=payload, headers=headers) as response,
                            ):
                                status, body = response.status, await response.json(content_type=None)
                        except TimeoutError:
                            failures.append(f"{name}: no answer within the guard: {variables!r:.500}")
                            continue
                        sent += 1
                        codes.update(
                            e.get("extensions", {}).get("code", "-") for e in body.get("errors") or []
                        )
                        failures += [f"{name}: {p}: {variables!r:.500}" for p in problems_of(status, body)]
                        failures += [f"{name}: log {line}: {variables!r:.500}" for line in log.take()]
                round_ += 1
    print(f"\nvariables fuzz: {sent} requests, {len(fields)} fields, {round_} rounds of {budget.describe()}")
    print(f"variables fuzz: error codes seen {dict(codes.most_common())}; {len(failures)} failures")
    assert not failures, "\n\n".join(failures[:10])
    assert other.login
