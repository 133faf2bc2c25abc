"""Batched requests over raw HTTP (gql does not batch): one cost budget, coded errors."""

from __future__ import annotations

import hashlib
from typing import Any

import aiohttp

from gateway.settings import Settings
from tests.support.client import Api
from tests.support.limits import NESTED

FOLDERS = "{ me { folders { label } } }"
# 1 + nodes (1 + 20 * (slug 1 + title 1 + body 401 + comments (1 + nodes (1 + 45 * 20)))) = 26102
# each (a body holds up to 100 000 characters, a comment's text 4000: they cost 1 + 400 and
# 1 + 16), and 20 + 20 * 45 list items at execution, under the 5000-item budget alone.
HEAVY = """{ posts(first: 20) { nodes { slug title body
  comments(first: 45) { nodes { id text commenterName postedAt } } } } }"""
HEAVY_COST = 26102


async def post(api: Api, body: Any, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as http:
        async with http.post(api.url, json=body, headers=headers) as response:
            return response.status, await response.json()


def create_folder(label: str) -> dict[str, Any]:
    return {
        "query": "mutation($l: String!) { createFolder(label: $l) { label } }",
        "variables": {"l": label},
    }


async def labels(api: Api, token: str) -> set[str]:
    data = await api.ok(FOLDERS, token=token)
    return {f["label"] for f in data["me"]["folders"]}


async def test_a_batch_answers_in_order(api: Api) -> None:
    account = await api.sign_up("batch")
    status, body = await post(
        api,
        [
            {"query": "{ me { user { login } } }"},
            {
                "query": "query Q($s: String!) { post(slug: $s) { slug } }",
                "variables": {"s": "absent"},
                "operationName": "Q",
            },
        ],
        account.token,
    )
    assert status == 200
    assert body[0]["data"] == {"me": {"user": {"login": account.login}}}
    assert body[1]["data"] == {"post": None}


async def test_mutations_in_a_batch_all_apply(api: Api) -> None:
    account = await api.sign_up("batch")
    status, body = await post(api, [create_folder("first"), create_folder("second")], account.token)
    assert status == 200
    assert [b["data"]["createFolder"]["label"] for b in body] == ["first", "second"]
    assert {"first", "second"} <= await labels(api, account.token)


async def test_the_batch_shares_one_cost_budget(api: Api) -> None:
    account = await api.sign_up("batch")
    limit = Settings().max_cost
    heavy = limit // HEAVY_COST + 1  # each fits alone, together they do not
    assert heavy < Settings().max_batch
    alone = await api.call(HEAVY)
    assert "QUERY_TOO_COMPLEX" not in alone.codes
    assert alone.extensions["cost"]["total"] == HEAVY_COST
    batch = [create_folder("never"), *([{"query": HEAVY}] * heavy)]
    status, body = await post(api, batch, account.token)
    assert status == 200
    assert len(body) == len(batch)
    total = 2 + heavy * HEAVY_COST  # createFolder { label } costs 1 + 1
    for answer in body:
        assert "data" not in answer or answer["data"] is None
        expected = {"code": "QUERY_TOO_COMPLEX", "cost": total, "limit": limit}
        assert answer["errors"][0]["extensions"] == expected
    # Nothing ran: the mutation of the refused batch stored nothing.
    assert "never" not in await labels(api, account.token)


async def test_too_many_operations_are_query_too_complex(api: Api) -> None:
    count = Settings().max_batch + 1
    status, body = await post(api, [{"query": "{ __typename }"}] * count)
    assert status == 200
    assert len(body) == count
    assert {a["errors"][0]["extensions"]["code"] for a in body} == {"QUERY_TOO_COMPLEX"}
    assert "at most 10 operations" in body[0]["errors"][0]["message"]
    status, body = await post(api, [{"query": "{ __typename }"}] * (count - 1))
    assert [a["data"] for a in body] == [{"__typename": "Query"}] * (count - 1)


async def test_a_subscription_in_a_batch_is_bad_request(api: Api) -> None:
    status, body = await post(
        api, [{"query": "subscription { messageReceived { id } }"}, {"query": "{ __typename }"}]
    )
    assert status == 200
    assert body[0]["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert "WebSocket" in body[0]["errors"][0]["message"]
    assert body[1]["data"] == {"__typename": "Query"}


async def test_a_refused_cost_has_the_same_shape_on_every_path(api: Api) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(api.url, params={"query": NESTED}, headers={"Accept": "application/json"}) as r:
            via_get = (await r.json())["errors"][0]
    _, via_post = await post(api, {"query": NESTED})
    _, via_batch = await post(api, [{"query": NESTED}])
    single = via_post["errors"][0]
    batched = via_batch[0]["errors"][0]
    for error in (via_get, single, batched):
        assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        assert error["extensions"]["limit"] == Settings().max_cost
        assert error["extensions"]["cost"] == single["extensions"]["cost"]
        assert error["message"] == single["message"]
    # A limit other than the cost is also coded in a batch, from the operation's own checks.
    aliases = "{ " + " ".join(f"b{i}: __typename" for i in range(40)) + " }"
    _, body = await post(api, [{"query": aliases}])
    assert body[0]["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"


async def test_a_batch_of_persisted_hashes_shares_the_cost_budget(api: Api) -> None:
    """Sent by hash alone, each operation is costed as the document its hash names."""
    sha = hashlib.sha256(HEAVY.encode()).hexdigest()
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": sha}}
    status, registered = await post(api, {"query": HEAVY, "extensions": extensions})
    assert status == 200 and "errors" not in registered, registered
    heavy = Settings().max_cost // HEAVY_COST + 1
    status, body = await post(api, [{"extensions": extensions}] * heavy)
    assert status == 200
    total = heavy * HEAVY_COST
    for answer in body:
        assert answer["errors"][0]["extensions"] == {
            "code": "QUERY_TOO_COMPLEX",
            "cost": total,
            "limit": Settings().max_cost,
        }
