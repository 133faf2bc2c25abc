"""``@defer`` and ``@stream`` over HTTP as ``multipart/mixed`` (``gateway/http/incremental.py``).

Read with a raw HTTP client, to see the parts as sent; Apollo Client 4 reads them in
``tests/e2e/test_apollo_client.py``, and the plain-field executor answers them as the
reference executor does in ``tests/integration/test_plain_fields.py``.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from tests.support.client import Account, Api

DEFER_2022 = "multipart/mixed;deferSpec=20220824, application/json"
V02 = "multipart/mixed;incrementalSpec=v0.2"

PLAIN = """query($w: String!) { me { conversation(with: $w) { id unreadCount
  messages(first: 10) { nodes { id content sender { login } } } } } }"""
DEFERRED = """query($w: String!) { me { conversation(with: $w) { id unreadCount
  ... @defer(label: "messages") { messages(first: 10) { nodes { id content sender { login } } } } } } }"""
STREAMED = """query($w: String!) { me { conversation(with: $w) { messages(first: 10) {
  nodes @stream(initialCount: 1) { content } } } } }"""


def parts(response_body: bytes, boundary: str = "-") -> list[dict[str, Any]]:
    """The JSON parts of a multipart/mixed body."""
    found = []
    for chunk in response_body.split(f"\r\n--{boundary}".encode()):
        _, _, body = chunk.partition(b"\r\n\r\n")
        if body.strip():
            found.append(json.loads(body))
    return found


async def post(api: Api, query: str, variables: Any, token: str, accept: str) -> tuple[int, str, bytes]:
    headers = {"Authorization": f"Bearer {token}", "Accept": accept, "Accept-Encoding": "gzip, br"}
    async with aiohttp.ClientSession() as http:
        async with http.post(api.url, json={"query": query, "variables": variables}, headers=headers) as r:
            return r.status, r.headers.get("Content-Type", ""), await r.read()


async def conversation(api: Api) -> tuple[Account, Account]:
    owner, partner = await api.sign_up("dfo"), await api.sign_up("dfp")
    send = "mutation($to: String!, $c: String!) { sendMessage(to: $to, content: $c) { id } }"
    for n in range(3):
        await api.ok(send, {"to": owner.login, "c": f"message {n} " + "x" * 400}, token=partner.token)
    return owner, partner


async def test_a_deferred_fragment_comes_after_the_initial_payload_for_the_same_statements(
    api: Api,
) -> None:
    owner, partner = await conversation(api)
    variables = {"w": partner.login}
    plain = await api.call(PLAIN, variables, token=owner.token)
    status, content_type, body = await post(api, DEFERRED, variables, owner.token, DEFER_2022)
    assert status == 200 and content_type.startswith("multipart/mixed")
    first, *rest = parts(body)
    assert first["hasNext"] is True
    assert "messages" not in first["data"]["me"]["conversation"]
    assert first["data"]["me"]["conversation"]["unreadCount"] == 3
    last = rest[-1]
    assert last["hasNext"] is False
    [deferred] = [entry for part in rest for entry in part.get("incremental", [])]
    assert deferred["path"] == ["me", "conversation"] and deferred["label"] == "messages"
    assert deferred["data"]["messages"] == plain.result["me"]["conversation"]["messages"]
    # The whole request's statements, in the last part: what the same query reads without @defer.
    assert last["extensions"]["cql"]["statements"] == plain.statements
    # Streamed, not compressed: a body over 1 KiB that the client accepted gzip and br for.
    assert len(body) > 1024


async def test_the_part_shapes_follow_accept(api: Api) -> None:
    owner, partner = await conversation(api)
    variables = {"w": partner.login}
    _, _, body = await post(api, STREAMED, variables, owner.token, DEFER_2022)
    first, *rest = parts(body)
    assert [node["content"][:9] for node in first["data"]["me"]["conversation"]["messages"]["nodes"]] == [
        "message 2"
    ]
    items = [entry for part in rest for entry in part.get("incremental", [])]
    # 20220824: each streamed entry names the index of its first item.
    assert items[0]["path"] == ["me", "conversation", "messages", "nodes", 1]
    streamed = [item["content"][:9] for entry in items for item in entry["items"]]
    assert streamed == ["message 1", "message 0"]

    _, _, body = await post(api, DEFERRED, variables, owner.token, V02)
    first, *rest = parts(body)
    assert first["pending"] == [{"id": "0", "path": ["me", "conversation"], "label": "messages"}]
    entries = [entry for part in rest for entry in part.get("incremental", [])]
    assert [entry["id"] for entry in entries] == ["0"]
    assert [done for part in rest for done in part.get("completed", [])] == [{"id": "0"}]


async def test_refused_without_multipart_in_a_batch_and_over_a_websocket(api: Api) -> None:
    owner, partner = await conversation(api)
    variables = {"w": partner.login}
    status, _, body = await post(api, DEFERRED, variables, owner.token, "application/json")
    refusal = json.loads(body)
    assert status == 406
    assert refusal["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert "multipart/mixed;deferSpec=20220824" in refusal["errors"][0]["message"]
    # A query without the directives is answered as before, as one JSON body.
    status, content_type, body = await post(api, PLAIN, variables, owner.token, DEFER_2022)
    assert status == 200 and content_type.startswith("application/json") and "data" in json.loads(body)

    headers = {"Authorization": f"Bearer {owner.token}", "Accept": DEFER_2022}
    batch = [{"query": DEFERRED, "variables": variables}, {"query": PLAIN, "variables": variables}]
    async with aiohttp.ClientSession() as http:
        async with http.post(api.url, json=batch, headers=headers) as response:
            answers = await response.json()
    assert answers[0]["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert "batch" in answers[0]["errors"][0]["message"]
    assert answers[1]["data"]["me"]["conversation"]["unreadCount"] == 3

    over_socket = await api.ws_call(DEFERRED, variables, token=owner.token)
    assert over_socket.errors and "Incremental delivery" in over_socket.errors[0]["message"]
    subscription = await api.ws_call(
        "subscription { messageReceived { id ... @defer { content } } }", token=owner.token
    )
    assert subscription.codes == ["GRAPHQL_VALIDATION_FAILED"]
