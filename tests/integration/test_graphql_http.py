"""GraphQL over HTTP as the spec has it: media types, request errors, subscriptions over plain HTTP."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from tests.support.client import Api

GRJ = "application/graphql-response+json"
SUBSCRIPTION = "subscription { messageReceived { id } }"


async def post(api: Api, body: dict[str, Any], accept: str | None) -> tuple[int, str, dict[str, Any]]:
    headers = {"Accept": accept} if accept is not None else {}
    async with aiohttp.ClientSession() as http, http.post(api.url, json=body, headers=headers) as response:
        # Every answer names its charset, whatever its media type and status.
        assert response.headers["Content-Type"] == f"{response.content_type}; charset=utf-8"
        return response.status, response.content_type, await response.json(content_type=None)


async def get(api: Api, query: str, accept: str) -> tuple[int, str, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(api.url, params={"query": query}, headers={"Accept": accept}) as response,
    ):
        assert response.headers["Content-Type"] == f"{response.content_type}; charset=utf-8"
        return response.status, response.content_type, await response.json(content_type=None)


@pytest.mark.parametrize(
    ("accept", "media_type"),
    [
        (None, "application/json"),
        ("*/*", "application/json"),
        ("application/json", "application/json"),
        (GRJ, GRJ),
        (f"{GRJ}, application/json;q=0.9", GRJ),
        (f"application/json, {GRJ};q=0.5", "application/json"),
    ],
)
async def test_the_response_media_type_follows_accept(api: Api, accept: str | None, media_type: str) -> None:
    status, content_type, body = await post(api, {"query": "{ __typename }"}, accept)
    assert (status, content_type, body["data"]) == (200, media_type, {"__typename": "Query"})


@pytest.mark.parametrize(
    ("query", "variables", "code"),
    [
        ("{", None, "GRAPHQL_PARSE_FAILED"),
        ("{ noSuchField }", None, "GRAPHQL_VALIDATION_FAILED"),
        ("query($login: String!) { user(login: $login) { login } }", {"login": 1}, "BAD_USER_INPUT"),
    ],
)
async def test_request_errors_have_no_data_and_answer_400_as_graphql_response_json(
    api: Api, query: str, variables: dict[str, Any] | None, code: str
) -> None:
    body = {"query": query, "variables": variables}
    status, content_type, result = await post(api, body, GRJ)
    assert (status, content_type) == (400, GRJ)
    assert "data" not in result
    assert [e["extensions"]["code"] for e in result["errors"]] == [code]

    status, content_type, result = await post(api, body, "application/json")
    assert (status, content_type) == (200, "application/json")
    assert "data" not in result
    assert [e["extensions"]["code"] for e in result["errors"]] == [code]


async def test_a_result_of_execution_keeps_data_and_answers_200(api: Api) -> None:
    status, content_type, result = await post(api, {"query": "{ me { user { login } } }"}, GRJ)
    assert (status, content_type) == (200, GRJ)
    assert result["data"] == {"me": None}


async def test_a_subscription_over_post_is_a_bad_request_naming_the_websocket(api: Api) -> None:
    response = await api.call(SUBSCRIPTION)
    assert response.data is None
    assert response.codes == ["BAD_REQUEST"]
    assert "WebSocket" in response.errors[0]["message"]
    assert "graphql-transport-ws" in response.errors[0]["message"]

    status, content_type, result = await post(api, {"query": SUBSCRIPTION}, GRJ)
    assert (status, content_type) == (400, GRJ)
    assert "data" not in result
    assert [e["extensions"]["code"] for e in result["errors"]] == ["BAD_REQUEST"]


async def test_a_subscription_over_get_is_a_bad_request(api: Api) -> None:
    status, content_type, result = await get(api, SUBSCRIPTION, GRJ)
    assert (status, content_type) == (400, GRJ)
    assert "data" not in result
    assert [e["extensions"]["code"] for e in result["errors"]] == ["BAD_REQUEST"]

    status, content_type, result = await get(api, SUBSCRIPTION, "application/json")
    assert (status, content_type) == (200, "application/json")
    assert [e["extensions"]["code"] for e in result["errors"]] == ["BAD_REQUEST"]
