"""The service around the graph: health, readiness, outages, limits, playground, errors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import aiohttp
import pytest

from gateway.graph.errors import classify
from gateway.settings import Settings
from tests.conftest import ServerFactory
from tests.support.client import Api
from tests.support.tcp_proxy import TcpProxy


async def test_healthz_and_readyz(api: Api) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{api.base_url}/healthz") as response:
            assert response.status == 200
            assert (await response.json())["status"] == "ok"
        async with http.get(f"{api.base_url}/readyz") as response:
            assert response.status == 200
            assert (await response.json())["cassandra"] == "ok"


async def test_cassandra_outage_gives_unavailable_and_the_service_recovers(
    api: Api, make_server: ServerFactory, base_settings: Settings
) -> None:
    proxy = TcpProxy("127.0.0.1", base_settings.cassandra_port)
    await proxy.start()
    other, _ = await make_server(
        contact_points=("127.0.0.1",), cassandra_port=proxy.port, request_timeout=2.0
    )
    account = await api.sign_up("outage")
    me = "{ me { user { login } } }"
    assert (await other.ok(me, token=account.token))["me"]["user"]["login"] == account.login

    await proxy.cut()
    started = time.monotonic()
    error = await other.error('{ user(login: "alice") { login } }')
    assert error["extensions"]["code"] == "UNAVAILABLE"
    assert "Traceback" not in error["message"]
    assert time.monotonic() - started < 2.0 + 3.0  # within the driver timeout, never a hang
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{other.base_url}/readyz") as response:
            assert response.status == 503
        async with http.get(f"{other.base_url}/healthz") as response:
            assert response.status == 200

    await proxy.start()  # same port: Cassandra is back
    deadline = time.monotonic() + 30
    while True:
        reply = await other.call(me, token=account.token)
        if not reply.errors:
            break
        assert reply.codes == ["UNAVAILABLE"]
        assert time.monotonic() < deadline, "the gateway did not reconnect"
        await asyncio.sleep(0.5)
    assert reply.result["me"]["user"]["login"] == account.login
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{other.base_url}/readyz") as ready:
            assert ready.status == 200
    await proxy.cut()


async def test_gateway_started_while_cassandra_is_down_becomes_ready_later(
    base_settings: Settings, api: Api
) -> None:
    from dataclasses import replace

    from aiohttp.test_utils import TestServer

    from gateway.server.app import READY, create_app

    proxy = TcpProxy("127.0.0.1", base_settings.cassandra_port)
    await proxy.start()
    port = proxy.port
    await proxy.cut()
    app = create_app(replace(base_settings, contact_points=("127.0.0.1",), cassandra_port=port))
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        down = Api(str(server.make_url("")))
        error = await down.error('{ user(login: "alice") { login } }')
        assert error["extensions"]["code"] == "UNAVAILABLE"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{down.base_url}/readyz") as response:
                assert response.status == 503
        await proxy.start()
        await asyncio.wait_for(app[READY].wait(), timeout=30)
        assert (await down.ok('{ user(login: "nobody-at-all") { login } }'))["user"] is None
    finally:
        await server.close()
        await proxy.cut()


async def test_depth_limit(api: Api, make_server: ServerFactory) -> None:
    shallow, _ = await make_server(max_depth=2)
    error = await shallow.error("{ me { user { login } } }")
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert "depth" in error["message"]
    via_fragment = await shallow.error("query { ...F } fragment F on Query { me { user { login } } }")
    assert via_fragment["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert (await shallow.ok("{ me { __typename } }"))["me"] is None


async def test_alias_flood_is_query_too_complex(api: Api) -> None:
    flood = "{ " + " ".join(f'a{i}: user(login: "alice") {{ login }}' for i in range(100)) + " }"
    error = await api.error(flood)
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    fine = "{ " + " ".join(f'a{i}: user(login: "alice") {{ login }}' for i in range(10)) + " }"
    assert set((await api.ok(fine)).keys()) == {f"a{i}" for i in range(10)}


async def test_token_flood_is_query_too_complex(api: Api) -> None:
    flood = "{ " + " ".join("__typename" for _ in range(3000)) + " }"
    response = await api.call(flood)
    assert response.codes == ["QUERY_TOO_COMPLEX"]


async def _raw(api: Api, body: Mapping[str, object]) -> list[str]:
    """POST without gql, which refuses to send documents or variables it finds invalid."""
    async with aiohttp.ClientSession() as http:
        async with http.post(api.url, json=body) as response:
            payload = await response.json()
    return [e["extensions"]["code"] for e in payload["errors"]]


async def test_syntax_and_validation_errors_carry_codes(api: Api) -> None:
    assert await _raw(api, {"query": "{ me { "}) == ["GRAPHQL_PARSE_FAILED"]
    assert await _raw(api, {"query": "{ noSuchField }"}) == ["GRAPHQL_VALIDATION_FAILED"]
    bad_variable = {"query": "query($l: String!) { user(login: $l) { login } }", "variables": {"l": 5}}
    assert await _raw(api, bad_variable) == ["BAD_USER_INPUT"]


def test_unexpected_errors_are_masked_with_a_request_id() -> None:
    from graphql import GraphQLError

    error = GraphQLError("boom", original_error=KeyError("secret internals"))
    masked = classify(error, "req-123")
    assert masked.message == "Internal server error."
    assert masked.extensions == {"code": "INTERNAL_SERVER_ERROR", "requestId": "req-123"}
    assert "secret" not in str(masked.formatted)


async def test_get_queries_and_graphiql_offline(api: Api) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(api.url, params={"query": '{ user(login: "nobody-x") { login } }'}) as r:
            assert r.status == 200
            assert (await r.json())["data"] == {"user": None}
        async with http.get(api.url, headers={"Accept": "text/html"}) as r:
            assert r.status == 200
            page = await r.text()
        assert "unpkg.com" not in page
        assets = [part.split('"')[0] for part in page.split('"/graphql/static/')[1:]]
        assert any(a.startswith("graphiql.min.js") for a in assets)
        for asset in assets:
            async with http.get(f"{api.base_url}/graphql/static/{asset}") as r:
                assert r.status == 200, asset
                assert len(await r.read()) > 0


async def test_mutations_are_not_allowed_over_get(api: Api) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(api.url, params={"query": "mutation { signOut }"}) as r:
            assert r.status in (400, 405)


@pytest.mark.parametrize("first", [101, 1000])
def test_page_size_cap(first: int) -> None:
    from gateway.graph.errors import QueryTooComplex
    from gateway.graph.pagination import page_size

    with pytest.raises(QueryTooComplex):
        page_size(None, first, 10)


def test_negative_page_size_is_bad_input() -> None:
    from gateway.errors import BadUserInput
    from gateway.graph.pagination import decode_cursor, page_size

    with pytest.raises(BadUserInput) as raised:
        page_size(None, -1, 10)
    assert raised.value.field == "first"
    with pytest.raises(BadUserInput) as bad_cursor:
        decode_cursor("!!!not base64")
    assert bad_cursor.value.field == "after"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("GATEWAY_MESSENGER_BUCKET", "weekly"),
        ("GATEWAY_PORT", "70000"),
        ("CASSANDRA_REPLICATION", "three please"),
        ("GATEWAY_CONTACTS_MAX_IN_FLIGHT", "0"),
        ("CASSANDRA_KEYSPACE", "1-bad"),
    ],
)
def test_bad_settings_stop_the_cli_naming_the_variable(variable: str, value: str) -> None:
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "gateway", "schema"],
        env={**os.environ, variable: value},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert variable in result.stderr
    assert "Traceback" not in result.stderr
