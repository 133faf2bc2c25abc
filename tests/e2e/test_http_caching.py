"""HTTP conventions of ``/graphql`` as curl sees them: caching headers and 304s on GET
answers, JSON (not GraphiQL) for ``fetch``'s ``Accept: */*``, ``X-Request-Id`` on every
response, 429 with ``Retry-After`` for a request refused whole as ``RATE_LIMITED``, and a
415 that names the accepted content types."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from multidict import CIMultiDictProxy

from tests.conftest import ServerFactory
from tests.support.client import Api
from tests.support.js_runner import run_node

GRJ = "application/graphql-response+json"
TAGGED = "query Tagged($tag: String) { posts(tag: $tag, first: 5) { nodes { slug title } } }"
PUBLISH = "mutation($input: PostInput!) { publishPost(input: $input) { slug } }"
SCHEMA_NAMES = "{ __schema { types { name description } } }"
STRONG_TAG = re.compile(r'"[0-9a-f]{32}"')
GENERATED_ID = re.compile(r"[0-9a-f]{32}")


class Answer:
    def __init__(self, status: int, headers: CIMultiDictProxy[str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def vary(self) -> set[str]:
        return {name.strip().lower() for name in self.headers.get("Vary", "").split(",") if name.strip()}


async def request(
    api: Api,
    method: str = "GET",
    *,
    params: dict[str, Any] | None = None,
    path: str = "/graphql",
    **kwargs: Any,
) -> Answer:
    """One raw request; bodies are read as sent (no decompression)."""
    query = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (params or {}).items()}
    async with (
        aiohttp.ClientSession(auto_decompress=False) as http,
        http.request(method, api.base_url + path, params=query, **kwargs) as response,
    ):
        return Answer(response.status, response.headers, await response.read())


async def tagged_posts(api: Api, count: int = 2) -> str:
    """A tag of its own with ``count`` posts; the tag."""
    author = await api.sign_up("cache")
    tag = f"cache{uuid.uuid4().hex[:10]}"
    for n in range(count):
        await publish(api, author.token, tag, n)
    return tag


async def publish(api: Api, token: str, tag: str, n: int) -> None:
    slug = f"{tag}-{n}-{uuid.uuid4().hex[:6]}"
    post = {"slug": slug, "title": f"Post {n}", "body": "text", "tags": [tag]}
    await api.ok(PUBLISH, {"input": post}, token=token)


async def test_an_anonymous_get_is_public_carries_a_strong_etag_and_revalidates_to_304(api: Api) -> None:
    tag = await tagged_posts(api)
    params = {"query": TAGGED, "variables": {"tag": tag}}
    first = await request(api, params=params, headers={"Accept": "application/json"})
    print("GET 200:", dict(first.headers))
    assert first.status == 200 and len(first.json()["data"]["posts"]["nodes"]) == 2
    tag_sent = first.headers["ETag"]
    assert STRONG_TAG.fullmatch(tag_sent)
    assert first.headers["Cache-Control"] == "public, max-age=0"
    assert first.vary == {"accept", "accept-encoding", "authorization"}
    assert GENERATED_ID.fullmatch(first.headers["X-Request-Id"])

    for validator in (tag_sent, f"W/{tag_sent}", f'"nope", {tag_sent}', "*"):
        again = await request(api, params=params, headers={"If-None-Match": validator})
        assert (again.status, again.body) == (304, b""), validator
        assert again.headers["ETag"] == tag_sent
        assert again.headers["Cache-Control"] == "public, max-age=0"
        assert again.vary == first.vary
        assert GENERATED_ID.fullmatch(again.headers["X-Request-Id"])
    print("GET 304:", dict(again.headers))

    other = await request(api, params=params, headers={"If-None-Match": '"0123"'})
    assert (other.status, other.headers["ETag"], other.body) == (200, tag_sent, first.body)
    # A new post changes the answer, so the old tag no longer matches.
    await publish(api, (await api.sign_up("cache")).token, tag, 9)
    changed = await request(api, params=params, headers={"If-None-Match": tag_sent})
    assert changed.status == 200 and changed.headers["ETag"] != tag_sent
    assert len(changed.json()["data"]["posts"]["nodes"]) == 3


async def test_answers_for_a_viewer_with_errors_or_to_a_post_are_private_and_not_stored(api: Api) -> None:
    account = await api.sign_up("cachev")
    me = {"query": "{ me { user { login } } }"}
    viewer = await request(api, params=me, headers={"Authorization": f"Bearer {account.token}"})
    assert viewer.json()["data"]["me"]["user"]["login"] == account.login
    assert viewer.headers["Cache-Control"] == "private, no-store"
    assert STRONG_TAG.fullmatch(viewer.headers["ETag"])
    assert "authorization" in viewer.vary
    # The same token's client may still revalidate what it kept itself.
    again = await request(
        api,
        params=me,
        headers={"Authorization": f"Bearer {account.token}", "If-None-Match": viewer.headers["ETag"]},
    )
    assert (again.status, again.headers["Cache-Control"]) == (304, "private, no-store")

    failed = await request(api, params={"query": "{ nope }"})
    assert failed.status == 200 and failed.json()["errors"]
    assert failed.headers["Cache-Control"] == "private, no-store"
    invalid = await request(api, params={"query": "{ nope }"}, headers={"Accept": GRJ})
    assert invalid.status == 400 and "ETag" not in invalid.headers
    assert invalid.headers["Cache-Control"] == "private, no-store"

    posted = await request(api, "POST", json={"query": "{ __typename }"})
    assert posted.json() == {"data": {"__typename": "Query"}, "extensions": posted.json()["extensions"]}
    assert posted.headers["Cache-Control"] == "private, no-store" and "ETag" not in posted.headers
    mutation = await request(api, params={"query": "mutation { signOut }"})
    assert mutation.status == 405 and mutation.headers["Cache-Control"] == "private, no-store"


async def test_the_public_max_age_is_the_operators(make_server: ServerFactory) -> None:
    api, _ = await make_server(public_max_age=300)
    answer = await request(api, params={"query": "{ __typename }"})
    assert answer.headers["Cache-Control"] == "public, max-age=300"


async def test_a_hash_only_get_as_fetch_sends_it_gets_json_and_revalidates(api: Api) -> None:
    tag = await tagged_posts(api, 1)
    digest = hashlib.sha256(TAGGED.encode()).hexdigest()
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": digest}}
    registered = await request(
        api, "POST", json={"query": TAGGED, "variables": {"tag": tag}, "extensions": extensions}
    )
    assert registered.status == 200 and "errors" not in registered.json()
    params = {"extensions": extensions, "variables": {"tag": tag}}
    fetched = await request(api, params=params, headers={"Accept": "*/*"})
    assert fetched.status == 200
    assert fetched.headers["Content-Type"].startswith("application/json")
    assert len(fetched.json()["data"]["posts"]["nodes"]) == 1
    assert fetched.headers["Cache-Control"] == "public, max-age=0"
    revalidated = await request(
        api, params=params, headers={"Accept": "*/*", "If-None-Match": fetched.headers["ETag"]}
    )
    assert revalidated.status == 304
    # Without a query, */* still gets JSON (an error that says so); a browser gets GraphiQL.
    bare = await request(api, headers={"Accept": "*/*"})
    assert bare.status == 400 and bare.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    browser = await request(
        api, headers={"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
    )
    assert browser.status == 200 and browser.headers["Content-Type"].startswith("text/html")
    assert "accept" in browser.vary
    also_html = await request(api, params={"extensions": extensions}, headers={"Accept": "text/html"})
    assert also_html.headers["Content-Type"].startswith("application/json"), "a hash names an operation"


async def test_a_compressed_answer_has_a_tag_of_its_own_and_any_coding_revalidates(api: Api) -> None:
    params = {"query": SCHEMA_NAMES}
    plain = await request(api, params=params, headers={"Accept-Encoding": "identity"})
    assert len(plain.body) > 1024 and "Content-Encoding" not in plain.headers
    identity = plain.headers["ETag"]
    tags = {"identity": identity}
    for coding in ("br", "gzip"):
        compressed = await request(api, params=params, headers={"Accept-Encoding": coding})
        assert compressed.headers["Content-Encoding"] == coding
        tags[coding] = compressed.headers["ETag"]
        assert tags[coding] == f'{identity[:-1]}-{coding}"'
    print("ETags by coding:", tags)
    # A copy kept in any coding is current: the 304 names the coding this request gets.
    revalidated = await request(
        api, params=params, headers={"Accept-Encoding": "gzip", "If-None-Match": tags["br"]}
    )
    assert (revalidated.status, revalidated.headers["ETag"]) == (304, tags["gzip"])
    revalidated = await request(
        api, params=params, headers={"Accept-Encoding": "identity", "If-None-Match": tags["gzip"]}
    )
    assert (revalidated.status, revalidated.headers["ETag"]) == (304, identity)


async def test_every_response_echoes_a_valid_request_id_or_a_new_one(api: Api) -> None:
    sent = "req-7f3a/ab.C_9:~"
    answers = {
        "GET query": await request(api, params={"query": "{ __typename }"}, headers={"X-Request-Id": sent}),
        "POST": await request(api, "POST", json={"query": "{ __typename }"}, headers={"X-Request-Id": sent}),
        "415": await request(
            api, "POST", data=b"{}", headers={"Content-Type": "text/plain", "X-Request-Id": sent}
        ),
        "404": await request(api, path="/nowhere", headers={"X-Request-Id": sent}),
        "healthz": await request(api, path="/healthz", headers={"X-Request-Id": sent}),
        "GraphiQL": await request(api, headers={"Accept": "text/html", "X-Request-Id": sent}),
    }
    statuses = {name: answer.status for name, answer in answers.items()}
    assert statuses == {
        "GET query": 200,
        "POST": 200,
        "415": 415,
        "404": 404,
        "healthz": 200,
        "GraphiQL": 200,
    }
    assert {name: answer.headers.get("X-Request-Id") for name, answer in answers.items()} == dict.fromkeys(
        answers, sent
    )
    replaced = []
    for unusable in ("x" * 129, "has space", "tab\there", "caf\u00e9", ""):
        answer = await request(
            api, "POST", json={"query": "{ __typename }"}, headers={"X-Request-Id": unusable}
        )
        replaced.append(answer.headers["X-Request-Id"])
    replaced.append((await request(api, path="/healthz")).headers["X-Request-Id"])
    assert all(GENERATED_ID.fullmatch(rid) for rid in replaced) and len(set(replaced)) == len(replaced)
    assert (await request(api, headers={"X-Request-Id": "x" * 128}, path="/healthz")).headers[
        "X-Request-Id"
    ] == "x" * 128


async def test_a_request_refused_whole_as_rate_limited_is_429_with_retry_after(
    make_server: ServerFactory,
) -> None:
    api, _ = await make_server(rate_sign_in="2/h")
    account = await api.sign_up("limited")
    sign_in = {
        "query": "mutation($l: String!, $p: String!) { signIn(login: $l, password: $p) { token } }",
        "variables": {"l": account.login, "p": account.password},
    }
    allowed = await request(api, "POST", json=sign_in, headers={"Accept": GRJ})
    assert allowed.status == 200 and allowed.json()["data"]["signIn"]["token"]
    # One more left: a batch of an allowed and a refused sign-in is not refused whole.
    mixed = await request(api, "POST", json=[sign_in, sign_in], headers={"Accept": GRJ})
    assert mixed.status == 200 and "Retry-After" not in mixed.headers
    assert sorted(bool(item.get("errors")) for item in mixed.json()) == [False, True]

    refused = await request(api, "POST", json=sign_in, headers={"Accept": GRJ})
    body = refused.json()
    print("429:", dict(refused.headers), body)
    assert refused.status == 429
    assert refused.headers["Content-Type"].startswith(GRJ)
    (error,) = body["errors"]
    assert body["data"] is None and error["extensions"]["code"] == "RATE_LIMITED"
    assert refused.headers["Retry-After"] == str(error["extensions"]["retryAfter"])
    assert int(refused.headers["Retry-After"]) >= 1
    batch = await request(api, "POST", json=[sign_in, sign_in], headers={"Accept": GRJ})
    assert batch.status == 429 and int(batch.headers["Retry-After"]) >= 1
    # application/json clients keep the GraphQL-over-HTTP spec's 200.
    legacy = await request(api, "POST", json=sign_in, headers={"Accept": "application/json"})
    assert legacy.status == 200 and "Retry-After" not in legacy.headers
    assert legacy.json()["errors"][0]["extensions"]["code"] == "RATE_LIMITED"


async def test_an_unsupported_content_type_names_the_accepted_ones(api: Api) -> None:
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        answer = await request(
            api, "POST", data=b'{"query": "{ __typename }"}', headers={"Content-Type": content_type}
        )
        (error,) = answer.json()["errors"]
        assert answer.status == 415 and error["extensions"]["code"] == "BAD_REQUEST"
        assert f"`{content_type}`" in error["message"]
        assert "`application/json`" in error["message"] and "`multipart/form-data`" in error["message"]
    unnamed = await request(
        api, "POST", data=b'{"query": "{ __typename }"}', skip_auto_headers=["Content-Type"]
    )
    assert unnamed.status == 415 and "(none given)" in unnamed.json()["errors"][0]["message"]


async def test_chromium_keeps_a_get_answer_and_its_second_load_is_a_304(api: Api) -> None:
    """fetch() in a page of the gateway's origin, twice for each URL: the browser's own
    cache revalidates, the wire shows 200 then 304, the page gets the same JSON."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed: scripts/test installs Debian's chromium when root")
    tag = await tagged_posts(api, 2)
    digest = hashlib.sha256(TAGGED.encode()).hexdigest()
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": digest}}
    registered = await request(
        api, "POST", json={"query": TAGGED, "variables": {"tag": tag}, "extensions": extensions}
    )
    assert "errors" not in registered.json()
    plain = "/graphql?" + urlencode({"query": TAGGED, "variables": json.dumps({"tag": tag})})
    hashed = "/graphql?" + urlencode(
        {"extensions": json.dumps(extensions), "variables": json.dumps({"tag": tag})}
    )
    config = {
        "base": api.base_url,
        "chromium": chromium,
        "noSandbox": os.geteuid() == 0,
        "loads": [plain, hashed],
    }
    report = await run_node("http_cache.mjs", json.dumps(config), needs="playwright-core")
    print(json.dumps(report["network"], indent=1))
    for path in (plain, hashed):
        wire = [entry for entry in report["network"] if entry["path"] == path]
        assert [entry["status"] for entry in wire] == [200, 304], wire
        first, second = wire
        assert STRONG_TAG.fullmatch(first["etag"]) and first["ifNoneMatch"] is None
        assert second["ifNoneMatch"] == first["etag"] and second["etag"] == first["etag"]
        assert first["cacheControl"] == second["cacheControl"] == "public, max-age=0"
        assert first["accept"] == "*/*"
        assert first["requestId"] and second["requestId"] and first["requestId"] != second["requestId"]
        loads = [load for load in report["loads"] if load["path"] == path]
        assert [load["status"] for load in loads] == [200, 200]
        assert all(load["contentType"].startswith("application/json") for load in loads)
        assert loads[0]["body"] == loads[1]["body"]
        assert len(json.loads(loads[0]["body"])["data"]["posts"]["nodes"]) == 2
