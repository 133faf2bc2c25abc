"""Automatic persisted queries as Apollo's link speaks them, and trusted documents."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.http.persisted import LruDocumentStore
from tests.conftest import ServerFactory
from tests.support.client import Api
from tests.support.persisted import GRJ, codes, persisted, post, sha


async def get(api: Api, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
    headers = {"Accept": GRJ}
    async with aiohttp.ClientSession() as http, http.get(api.url, params=params, headers=headers) as r:
        return r.status, await r.json(content_type=None)


async def test_an_unknown_hash_asks_for_the_query_then_hash_only_requests_work(api: Api) -> None:
    document = 'query Probe { user(login: "nobody-persisted") { login } }'
    status, result = await post(api, {"extensions": persisted(document)})
    assert status == 400 and "data" not in result
    assert codes(result) == ["PERSISTED_QUERY_NOT_FOUND"]
    assert result["errors"][0]["message"] == "PersistedQueryNotFound"
    status, result = await post(api, {"extensions": persisted(document)}, accept="application/json")
    assert (status, codes(result)) == (200, ["PERSISTED_QUERY_NOT_FOUND"])

    status, result = await post(api, {"query": document, "extensions": persisted(document)})
    assert (status, result["data"]) == (200, {"user": None})

    status, result = await post(api, {"extensions": persisted(document)})
    assert (status, result["data"]) == (200, {"user": None})
    status, result = await get(api, {"extensions": json.dumps(persisted(document))})
    assert (status, result["data"]) == (200, {"user": None})


async def test_a_hash_that_is_not_the_querys_is_a_bad_request(api: Api) -> None:
    status, result = await post(api, {"query": "{ __typename }", "extensions": persisted("{ other }")})
    assert (status, codes(result)) == (400, ["BAD_REQUEST"])
    status, result = await post(api, {"extensions": persisted("{ __typename }")})
    assert codes(result) == ["PERSISTED_QUERY_NOT_FOUND"], "a refused registration is not remembered"
    bad_version = {"persistedQuery": {"version": 2, "sha256Hash": sha("{ __typename }")}}
    status, result = await post(api, {"query": "{ __typename }", "extensions": bad_version})
    assert (status, codes(result)) == (400, ["BAD_REQUEST"])


async def test_the_store_keeps_the_most_recently_used_documents() -> None:
    store = LruDocumentStore(max_documents=2)
    await store.put("a", "{ a }")
    await store.put("b", "{ b }")
    assert await store.get("a") == "{ a }"
    await store.put("c", "{ c }")
    assert [await store.get(k) for k in "abc"] == ["{ a }", None, "{ c }"]
    small = LruDocumentStore(max_bytes=10)
    await small.put("a", "{ aaaa }")
    await small.put("b", "{ bbbb }")
    assert (await small.get("a"), await small.get("b"), len(small)) == (None, "{ bbbb }", 1)


@pytest.fixture
async def trusted_api(make_server: ServerFactory, tmp_path: Path) -> Api:
    manifest = tmp_path / "documents.json"
    documents = ("{ __typename }", "query Me { me { user { login } } }")
    manifest.write_text(json.dumps({sha(d): d for d in documents}))
    api, _ = await make_server(trusted_documents=manifest, introspection=None)  # its default
    return api


async def test_trusted_documents_lock_the_gateway_to_the_manifest(trusted_api: Api) -> None:
    status, result = await post(trusted_api, {"extensions": persisted("{ __typename }")})
    assert (status, result["data"]) == (200, {"__typename": "Query"})
    status, result = await post(trusted_api, {"query": "query Me { me { user { login } } }"})
    assert (status, result["data"]) == (200, {"me": None})

    status, result = await post(trusted_api, {"query": "{ me { user { login } } }"})
    assert (status, codes(result)) == (400, ["PERSISTED_QUERY_NOT_FOUND"])
    other = '{ user(login: "a") { login } }'
    status, result = await post(trusted_api, {"query": other, "extensions": persisted(other)})
    assert codes(result) == ["PERSISTED_QUERY_NOT_FOUND"], "nothing is registered"
    status, result = await post(trusted_api, {"query": "{ __schema { queryType { name } } }"})
    assert codes(result) == ["PERSISTED_QUERY_NOT_FOUND"], "introspection is off"


async def test_introspection_can_stay_on_with_trusted_documents(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    manifest = tmp_path / "documents.json"
    manifest.write_text(json.dumps({sha("{ __typename }"): "{ __typename }"}))
    api, _ = await make_server(trusted_documents=manifest, introspection=True)
    status, result = await post(api, {"query": "{ __schema { queryType { name } } }"})
    assert (status, result["data"]) == (200, {"__schema": {"queryType": {"name": "Query"}}})
    status, result = await post(api, {"query": "{ __typename me { user { login } } }"})
    assert codes(result) == ["PERSISTED_QUERY_NOT_FOUND"]


async def test_a_manifest_whose_hash_is_not_its_documents_stops_the_start(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    manifest = tmp_path / "documents.json"
    manifest.write_text(json.dumps({sha("{ a }"): "{ __typename }"}))
    with pytest.raises(ValueError, match="GATEWAY_TRUSTED_DOCUMENTS"):
        await make_server(trusted_documents=manifest)


@pytest.mark.parametrize(
    "junk",
    [
        "this is not GraphQL at all",
        "{ noSuchField }",
        "query($n: Int!) { posts(first: $n) { nodes { slug } } }",  # valid, variable missing
    ],
)
async def test_only_documents_that_parse_and_validate_are_remembered(api: Api, junk: str) -> None:
    document = junk + f" # {uuid.uuid4()}"
    status, result = await post(api, {"query": document, "extensions": persisted(document)})
    assert codes(result), "the document itself is refused"
    status, result = await post(api, {"extensions": persisted(document)})
    assert codes(result) == ["PERSISTED_QUERY_NOT_FOUND"], "and its text was not kept"
    valid = f'query Kept {{ user(login: "nobody-{uuid.uuid4().hex[:8]}") {{ login }} }}'
    await post(api, {"query": valid, "extensions": persisted(valid)})
    status, result = await post(api, {"extensions": persisted(valid)})
    assert (status, codes(result), result["data"]) == (200, [], {"user": None})


async def test_registrations_are_limited_per_client_address_and_the_operation_still_runs(
    make_server: ServerFactory,
) -> None:
    api, _ = await make_server(rate_persisted_queries="2/h", trusted_proxies=("127.0.0.1",))

    async def register(document: str, address: str) -> dict[str, Any]:
        body = {"query": document, "extensions": persisted(document)}
        headers = {"Accept": GRJ, "X-Forwarded-For": address}
        async with aiohttp.ClientSession() as http, http.post(api.url, json=body, headers=headers) as r:
            assert r.status == 200
            return dict(await r.json(content_type=None))

    documents = [
        f'query Reg{i} {{ user(login: "reg-{uuid.uuid4().hex[:8]}") {{ login }} }}' for i in range(4)
    ]
    for document in documents[:3]:
        assert (await register(document, "203.0.113.40"))["data"] == {"user": None}
    # Sending a document the gateway already knows registers nothing, so it costs nothing.
    assert (await register(documents[0], "203.0.113.40"))["data"] == {"user": None}
    known = [codes((await post(api, {"extensions": persisted(d)}))[1]) for d in documents[:3]]
    assert known == [[], [], ["PERSISTED_QUERY_NOT_FOUND"]], "the third registration ran but was not kept"
    # Another address has a bucket of its own.
    assert (await register(documents[3], "198.51.100.40"))["data"] == {"user": None}
    assert codes((await post(api, {"extensions": persisted(documents[3])}))[1]) == []
