"""Pre-execution limits: linear fragment walks, static cost, introspection shape."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from gql import gql
from gql.transport.exceptions import TransportQueryError
from graphql import get_introspection_query, parse

from gateway.graph.cost import analyse
from gateway.schema import build_schema
from gateway.settings import Settings
from tests.conftest import ServerFactory
from tests.support.client import Api, Response
from tests.support.limits import NESTED
from tests.support.screens import CONVERSATION, EMAIL, FRONT_PAGE, HISTORY, MAILBOX, MAIN_VIEW, POST_PAGE

GRAPHIQL_BUNDLE = Path(__file__).parents[2] / "gateway/server/static/graphiql/graphiql.min.js"


def doubling_bomb(n: int, leaf: str) -> str:
    """``n`` fragments, each spreading the next twice: 2**n leaves once expanded."""
    fragments = [f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(n)]
    fragments.append(f"fragment F{n} on Query {{ {leaf} }}")
    return "query { ...F0 }\n" + "\n".join(fragments)


async def call(api: Api, query: str, variables: dict[str, Any] | None = None, **kwargs: Any) -> Response:
    # A guard against a hung event loop, not a timing assertion.
    return await asyncio.wait_for(api.call(query, variables, **kwargs), timeout=60)


@pytest.mark.parametrize("leaf", ["__typename", "posts(first: 1) { nodes { slug } }"])
async def test_doubling_bombs_are_refused_before_any_cql(api: Api, leaf: str) -> None:
    response = await call(api, doubling_bomb(40, leaf))
    assert response.codes == ["QUERY_TOO_COMPLEX"]
    error = response.errors[0]["extensions"]
    assert error["cost"] >= 2**40
    assert error["limit"] == Settings().max_cost
    assert response.statements == 0


async def test_small_doubling_documents_still_answer(api: Api) -> None:
    response = await call(api, doubling_bomb(12, "__typename"))
    assert not response.errors, response.errors
    assert response.data == {"__typename": "Query"}


async def test_fragment_count_is_capped(api: Api) -> None:
    chain = [f"fragment F{i} on Query {{ ...F{i + 1} }}" for i in range(150)]
    chain.append("fragment F150 on Query { __typename }")
    response = await call(api, "query { ...F0 }\n" + "\n".join(chain))
    assert response.codes == ["QUERY_TOO_COMPLEX"]
    assert "fragments" in response.errors[0]["message"]


def test_the_walk_is_linear_in_the_document() -> None:
    schema = build_schema()._schema
    for leaf in ("__typename", "posts(first: 1) { nodes { slug } }"):
        visits = {n: analyse(schema, parse(doubling_bomb(n, leaf))).visits for n in (10, 20, 40)}
        # Two spreads per fragment, each fragment walked once: a straight line.
        assert visits[20] - visits[10] == 20
        assert visits[40] - visits[20] == 40
        assert analyse(schema, parse(doubling_bomb(40, leaf))).cost >= 2**40


async def test_nested_lists_are_refused_with_no_statement(api: Api) -> None:
    response = await call(api, NESTED)
    assert response.codes == ["QUERY_TOO_COMPLEX"]
    extensions = response.errors[0]["extensions"]
    assert extensions["cost"] > extensions["limit"] == Settings().max_cost
    assert response.statements == 0


async def test_cost_follows_the_formula(make_server: ServerFactory) -> None:
    # posts: 1 + nodes (1 + n * (title 1 + tags 1 + comments (1 + edges (1 + 2 * node (1 + text 17))
    #                                                          + pageInfo (1 + 1))))
    # = 1 + 1 + n * 42, so 128 with the default n = 3 and 86 with n = 2. A comment's text holds
    # up to 4000 characters: 1 + 4000 // 250.
    query = """query($n: Int = 3) { posts(first: $n) { nodes { title tags
      comments(first: 2) { edges { node { text } } pageInfo { hasNextPage } } } } }"""
    tight, _ = await make_server(max_cost=127)
    refused = await call(tight, query)
    assert refused.codes == ["QUERY_TOO_COMPLEX"]
    assert refused.errors[0]["extensions"] == {"code": "QUERY_TOO_COMPLEX", "cost": 128, "limit": 127}
    assert refused.statements == 0
    fits = await call(tight, query, {"n": 2})
    assert not fits.errors, fits.errors
    assert fits.extensions["cost"] == {"total": 86, "limit": 127}
    # Without `first` a connection counts its schema default: posts(first: Int = 10).
    defaulted = await call(tight, "{ posts { nodes { slug } } }")
    assert defaulted.extensions["cost"]["total"] == 1 + 1 + 10


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        (FRONT_PAGE, None),
        (POST_PAGE, {"slug": "no-such-post"}),
        (MAILBOX, None),
        (EMAIL, {"id": "5f1c2a10-0000-1000-8000-000000000000"}),
        (MAIN_VIEW, None),
        (CONVERSATION, {"with": "nobody-here"}),
        (HISTORY, {"n": "no-such-room", "first": 100}),
    ],
)
async def test_canonical_screens_fit_the_default_cost(
    api: Api, query: str, variables: dict[str, Any] | None
) -> None:
    account = await api.sign_up("screen")
    response = await call(api, query, variables, token=account.token)
    assert "QUERY_TOO_COMPLEX" not in response.codes, response.errors
    assert 0 < response.extensions["cost"]["total"] <= Settings().max_cost


def _graphiql_introspection_query() -> str:
    """The document GraphiQL sends, built by the bundle's own function with its options."""
    bundle = GRAPHIQL_BUNDLE.read_text()
    start = bundle.index("function getIntrospectionQuery(options)")
    end = bundle.index("\n}\n", start) + 3
    options = {"inputValueDeprecation": True, "schemaDescription": True}
    script = bundle[start:end] + f"\nprocess.stdout.write(getIntrospectionQuery({json.dumps(options)}));"
    return subprocess.run(["node", "-e", script], check=True, capture_output=True, text=True).stdout


async def test_graphiql_introspection_fits(api: Api) -> None:
    graphiql = _graphiql_introspection_query()
    assert re.search(r"ofType\s*\{", graphiql)
    for document in (graphiql, get_introspection_query(descriptions=True, input_value_deprecation=True)):
        data = (await call(api, document)).data
        assert data is not None
        assert any(t["name"] == "Query" for t in data["__schema"]["types"])


async def test_introspection_bombs_are_refused(api: Api) -> None:
    deep = "{ __schema { types { fields { type " + "{ ofType " * 20 + "{ name }" + " }" * 20 + " } } } }"
    response = await call(api, deep)
    assert response.codes == ["QUERY_TOO_COMPLEX"]
    assert "Introspection depth" in response.errors[0]["message"]
    wide = "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }"
    response = await call(api, wide)
    assert response.codes == ["QUERY_TOO_COMPLEX"]
    assert "lists" in response.errors[0]["message"]
    assert response.statements == 0


async def test_introspection_can_be_turned_off(make_server: ServerFactory) -> None:
    closed, _ = await make_server(introspection=False)
    response = await call(closed, "{ __schema { queryType { name } } }")
    assert response.codes and set(response.codes) == {"GRAPHQL_VALIDATION_FAILED"}
    assert response.data is None
    assert "introspection" in response.errors[0]["message"].lower()
    response = await call(closed, '{ __type(name: "Query") { name } }')
    assert response.codes and set(response.codes) == {"GRAPHQL_VALIDATION_FAILED"}
    assert (await closed.ok("{ __typename }")) == {"__typename": "Query"}


async def test_limits_hold_over_the_websocket(api: Api) -> None:
    async with api.websocket() as session:
        with pytest.raises(TransportQueryError) as refused:
            await session.execute(gql(NESTED))
    assert refused.value.errors
    error = refused.value.errors[0]
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert error["extensions"]["limit"] == Settings().max_cost
    assert error["extensions"]["cost"] > Settings().max_cost


INTROSPECTED_FIELDS = "__schema { types { name fields { name args { name } type { name } } } }"


async def test_aliased_introspection_is_costed_like_any_selection(api: Api) -> None:
    """Ten documents of ten aliased introspections each, in one anonymous batch of under
    16 KB: every one refused before it runs, in a few kilobytes."""
    document = "query { " + " ".join(f"a{n}: {INTROSPECTED_FIELDS}" for n in range(10)) + " }"
    body = json.dumps([{"query": document}] * 10).encode()
    assert len(body) < 16 * 1024
    async with aiohttp.ClientSession() as http:
        async with http.post(api.url, data=body, headers={"Content-Type": "application/json"}) as answer:
            assert answer.status == 200
            raw = await answer.read()
    assert len(raw) < 10 * 1024
    results = json.loads(raw)
    assert len(results) == 10
    for result in results:
        assert [e["extensions"]["code"] for e in result["errors"]] == ["QUERY_TOO_COMPLEX"]
        assert result["errors"][0]["extensions"]["cost"] > Settings().max_cost
    one = await call(api, "query { " + INTROSPECTED_FIELDS + " }")
    assert not one.errors
    assert 100 * one.extensions["cost"]["total"] > Settings().max_cost


async def test_the_cost_of_introspection_counts_what_it_resolves(api: Api) -> None:
    response = await call(api, "{ __schema { types { name } } }")
    types = response.result["__schema"]["types"]
    assert response.extensions["cost"]["total"] == 2 + len(types)
    response = await call(api, '{ __type(name: "Query") { fields { name } } }')
    fields = response.result["__type"]["fields"]
    assert response.extensions["cost"]["total"] == 2 + len(fields)


async def test_responses_over_the_size_limit_are_refused(make_server: ServerFactory) -> None:
    small, _ = await make_server(max_response_bytes=4096)
    large = "{ __schema { types { name description } } }"
    refused = await call(small, large)
    assert refused.codes == ["QUERY_TOO_COMPLEX"]
    assert refused.data is None
    assert refused.errors[0]["extensions"]["limit"] == 4096
    assert "bytes" in refused.errors[0]["message"]
    assert (await small.ok("{ __typename }")) == {"__typename": "Query"}
    async with aiohttp.ClientSession() as http:
        batch = [{"query": "{ __typename }"}, {"query": large}]
        async with http.post(small.url, json=batch) as answer:
            results = await answer.json()
    assert [r["errors"][0]["extensions"]["code"] for r in results] == ["QUERY_TOO_COMPLEX"] * 2
    async with small.websocket() as session:
        with pytest.raises(TransportQueryError) as over_ws:
            await session.execute(gql(large))
    assert over_ws.value.errors is not None
    assert over_ws.value.errors[0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
