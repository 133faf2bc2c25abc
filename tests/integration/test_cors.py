"""CORS from GATEWAY_CORS_ORIGINS, over real HTTP and WebSocket handshakes."""

from __future__ import annotations

from dataclasses import replace

import aiohttp
import pytest
from aiohttp import hdrs

from gateway.settings import Settings
from tests.conftest import ServerFactory
from tests.support.client import Api

APP = "http://localhost:3000"
MOBILE = "capacitor://localhost"
OTHER = "https://evil.example"
TYPENAME = {"query": "{ __typename }"}


async def preflight(api: Api, path: str, origin: str) -> aiohttp.ClientResponse:
    headers = {
        hdrs.ORIGIN: origin,
        hdrs.ACCESS_CONTROL_REQUEST_METHOD: "POST",
        hdrs.ACCESS_CONTROL_REQUEST_HEADERS: "authorization, content-type",
    }
    async with aiohttp.ClientSession() as http, http.options(api.base_url + path, headers=headers) as r:
        await r.read()
        return r


async def websocket_accepted(api: Api, origin: str | None) -> bool:
    headers = {hdrs.ORIGIN: origin} if origin is not None else {}
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(api.url, protocols=["graphql-transport-ws"], headers=headers) as ws:
                await ws.send_json({"type": "connection_init", "payload": {}})
                message = await ws.receive_json(timeout=10)
                return bool(message["type"] == "connection_ack")
        except aiohttp.WSServerHandshakeError as exc:
            assert exc.status == 403
            return False


@pytest.fixture
async def cors_api(make_server: ServerFactory) -> Api:
    api, _ = await make_server(cors_origins=(APP, MOBILE))
    return api


@pytest.mark.parametrize("path", ["/graphql", "/attachments/00000000-0000-0000-0000-000000000000/a.txt"])
async def test_a_preflight_from_a_listed_origin_is_answered(cors_api: Api, path: str) -> None:
    response = await preflight(cors_api, path, APP)
    assert response.status in (200, 204)
    assert response.headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] == APP
    assert "POST" in response.headers[hdrs.ACCESS_CONTROL_ALLOW_METHODS]
    allowed_headers = response.headers[hdrs.ACCESS_CONTROL_ALLOW_HEADERS].lower()
    assert "authorization" in allowed_headers and "content-type" in allowed_headers
    assert response.headers[hdrs.ACCESS_CONTROL_ALLOW_CREDENTIALS] == "true"
    assert int(response.headers[hdrs.ACCESS_CONTROL_MAX_AGE]) > 0


async def test_a_preflight_from_another_origin_gets_no_allow_header(cors_api: Api) -> None:
    response = await preflight(cors_api, "/graphql", OTHER)
    assert hdrs.ACCESS_CONTROL_ALLOW_ORIGIN not in response.headers


async def test_responses_carry_cors_headers_for_listed_origins_only(cors_api: Api) -> None:
    async with aiohttp.ClientSession() as http:
        for origin in (APP, MOBILE):
            async with http.post(cors_api.url, json=TYPENAME, headers={hdrs.ORIGIN: origin}) as r:
                assert (await r.json())["data"] == {"__typename": "Query"}
                assert r.headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] == origin
                assert "Origin" in r.headers[hdrs.VARY]
                assert "Content-Disposition" in r.headers[hdrs.ACCESS_CONTROL_EXPOSE_HEADERS]
                assert "X-Request-Id" in r.headers[hdrs.ACCESS_CONTROL_EXPOSE_HEADERS]
        # A cached GET answer varies with the origin too.
        async with http.get(
            cors_api.url, params={"query": "{ __typename }"}, headers={hdrs.ORIGIN: APP}
        ) as r:
            assert r.headers[hdrs.VARY] == "Accept, Accept-Encoding, Authorization, Origin"
            assert "ETag" in r.headers[hdrs.ACCESS_CONTROL_EXPOSE_HEADERS]
        async with http.post(cors_api.url, json=TYPENAME, headers={hdrs.ORIGIN: OTHER}) as r:
            assert (await r.json())["data"] == {"__typename": "Query"}
            assert hdrs.ACCESS_CONTROL_ALLOW_ORIGIN not in r.headers
        async with http.get(f"{cors_api.base_url}/healthz", headers={hdrs.ORIGIN: APP}) as r:
            assert r.headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] == APP


async def test_websockets_from_listed_origins_are_admitted_and_others_refused(cors_api: Api) -> None:
    assert await websocket_accepted(cors_api, APP)
    assert await websocket_accepted(cors_api, MOBILE)
    assert not await websocket_accepted(cors_api, OTHER)
    assert await websocket_accepted(cors_api, None)


async def test_without_origins_only_the_same_origin_is_served(api: Api) -> None:
    response = await preflight(api, "/graphql", APP)
    assert hdrs.ACCESS_CONTROL_ALLOW_ORIGIN not in response.headers
    async with aiohttp.ClientSession() as http:
        async with http.post(api.url, json=TYPENAME, headers={hdrs.ORIGIN: APP}) as r:
            assert hdrs.ACCESS_CONTROL_ALLOW_ORIGIN not in r.headers
    assert not await websocket_accepted(api, APP)
    assert not await websocket_accepted(api, MOBILE)
    # localhost and 127.0.0.1 are different origins for a browser.
    assert not await websocket_accepted(api, api.base_url.replace("127.0.0.1", "localhost"))
    assert await websocket_accepted(api, api.base_url)
    assert await websocket_accepted(api, None)


async def test_any_origin_is_served_without_credentials(make_server: ServerFactory) -> None:
    api, _ = await make_server(cors_origins=("*",))
    response = await preflight(api, "/graphql", OTHER)
    assert response.headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] in (OTHER, "*")
    assert hdrs.ACCESS_CONTROL_ALLOW_CREDENTIALS not in response.headers
    assert await websocket_accepted(api, OTHER)


@pytest.mark.parametrize(
    "origins",
    [("*", APP), ("https://example.com/app",), ("not an origin",)],
)
def test_origins_that_are_not_origins_are_refused_at_start(origins: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="GATEWAY_CORS_ORIGINS"):
        replace(Settings(), cors_origins=origins).validate()
