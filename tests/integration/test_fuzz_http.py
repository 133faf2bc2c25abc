"""Byte-level fuzzing of HTTP: valid requests of every kind the gateway serves, damaged at
random and sent on raw sockets.

The corpus is what real clients send: JSON queries and mutations (signed in and not), GET
queries, a batch, persisted-query hashes, a multipart upload, an attachment download with a
range, a CORS preflight, a WebSocket upgrade, the playground, the health and static routes.
Each case damages one of them (``tests/support/fuzz/mutate.py``: bits flipped, bytes inserted or
deleted, truncation, splicing; headers repeated, folded or added, content types swapped,
lengths that lie, odd methods, targets and versions) and sends it on a fresh connection.

Whatever arrives, the gateway must answer below 500 (or close the connection), never with
``INTERNAL_SERVER_ERROR``, within ``HANG_GUARD`` seconds (a hang detector), and write no
traceback or error to its log. Cases run eight at a time; a failure names every case of its
round. The gateway here has short head and body deadlines, so a request that promises more
than it sends is answered 408 at once rather than after the default 10 and 30 seconds.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter
from urllib.parse import quote

import pytest

from tests.conftest import ServerFactory
from tests.support.client import Account, Api
from tests.support.fuzz.budget import Budget
from tests.support.fuzz.mutate import BLIND, HTTP_AWARE, mutate
from tests.support.fuzz.watch import watching
from tests.support.fuzz.wire import Answer, address, exchange
from tests.support.mail_helpers import send_files

#: Cases inside ``scripts/test``; ``scripts/fuzz`` runs for minutes instead.
BRIEF = 400
CONCURRENCY = 8
ME = "query Me { me { user { login firstname } talkPartners(first: 5) { nodes { unreadCount } } } }"
SEND = "mutation Send($to: String!, $c: String!) { sendMessage(to: $to, content: $c) { id content } }"
UPLOAD_QUERY = "mutation($i: EmailInput!) { sendEmail(input: $i) { id attachments { filename size } } }"


def _request(method: str, target: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    if body or method in {"POST", "PUT", "PATCH"}:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _json(method: str, payload: object, token: str | None = None, **headers: str) -> bytes:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    body = json.dumps(payload).encode()
    return _request(method, "/graphql", {"Content-Type": "application/json", **auth, **headers}, body)


def _multipart(token: str, to: str) -> bytes:
    boundary = "fuzzboundary"
    operations = {
        "query": UPLOAD_QUERY,
        "variables": {"i": {"to": [to], "subject": "s", "body": "b", "attachments": [None]}},
    }
    parts = [
        ('name="operations"', json.dumps(operations).encode()),
        ('name="map"', b'{"0": ["variables.i.attachments.0"]}'),
        ('name="0"; filename="a.txt"\r\nContent-Type: text/plain', b"hello fuzz"),
    ]
    body = (
        b"".join(
            f"--{boundary}\r\nContent-Disposition: form-data; {disposition}\r\n\r\n".encode()
            + content
            + b"\r\n"
            for disposition, content in parts
        )
        + f"--{boundary}--\r\n".encode()
    )
    headers = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "GraphQL-Preflight": "1",
        "Authorization": f"Bearer {token}",
    }
    return _request("POST", "/graphql", headers, body)


async def corpus(api: Api, alice: Account, bob: Account) -> list[bytes]:
    """One valid request of each kind, as sent on the wire."""
    sent = await send_files(
        api, alice, [bob.login], [("fuzz.bin", b"0123456789" * 50, "application/octet-stream")]
    )
    email = sent.result["sendEmail"]
    path = f"/attachments/{email['id']}/fuzz.bin"
    registered = "query Registered { __typename }"
    sha = hashlib.sha256(registered.encode()).hexdigest()
    persisted = {"persistedQuery": {"version": 1, "sha256Hash": sha}}
    await api.ok(registered)  # known to the gateway once sent with its hash below
    grj = {"Accept": "application/graphql-response+json"}
    get_query = quote("query($l: String!) { user(login: $l) { login firstname } }")
    get_variables = quote(json.dumps({"l": bob.login}))
    return [
        _json("POST", {"query": ME}, alice.token),
        _json("POST", {"query": ME}, None, **grj),
        _json(
            "POST",
            {"query": SEND, "variables": {"to": bob.login, "c": "fuzzed hello"}, "operationName": "Send"},
            alice.token,
        ),
        _json("POST", [{"query": ME}, {"query": "{ rooms(first: 3) { nodes { name } } }"}], alice.token),
        _json("POST", {"query": registered, "extensions": persisted}),
        _json("POST", {"extensions": persisted}, None, **grj),
        _json("POST", {"query": "{ posts(first: 2) { edges { cursor node { slug title } } } }"}),
        _request(
            "GET", f"/graphql?query={get_query}&variables={get_variables}", {"Accept": "application/json"}
        ),
        _request("GET", f"/graphql?extensions={quote(json.dumps(persisted))}", grj),
        _multipart(alice.token, bob.login),
        _request("GET", path, {"Authorization": f"Bearer {bob.token}", "Range": "bytes=10-99"}),
        _request(
            "OPTIONS",
            "/graphql",
            {
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type",
            },
        ),
        _request(
            "GET",
            "/graphql",
            {
                "Upgrade": "websocket",
                "Connection": "Upgrade",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Protocol": "graphql-transport-ws",
            },
        ),
        _request("GET", "/graphql", {"Accept": "text/html"}),
        _request("GET", "/readyz", {}),
        _request("GET", "/graphql/static/style.css", {"If-None-Match": '"x"'}),
    ]


def problems_of(answer: Answer) -> list[str]:
    found = []
    if answer.hung:
        found.append(f"no answer and still open after the guard (got {answer.status})")
    if answer.status is not None and answer.status >= 500:
        found.append(f"HTTP {answer.status}")
    if b"INTERNAL_SERVER_ERROR" in answer.body:
        found.append("INTERNAL_SERVER_ERROR in the body")
    return found


@pytest.fixture
async def fuzzed(make_server: ServerFactory) -> Api:
    api, _ = await make_server(
        header_timeout_seconds=0.5, body_timeout_seconds=0.5, cors_origins=("https://app.example",)
    )
    return api


async def test_damaged_http_requests_never_fail_the_server(fuzzed: Api) -> None:
    alice, bob = await fuzzed.sign_up("fuzzhttp"), await fuzzed.sign_up("fuzzhttpb")
    valid = await corpus(fuzzed, alice, bob)
    host, port = address(fuzzed.base_url)
    budget = Budget(brief=BRIEF)
    rng = budget.rng()
    statuses: Counter[str] = Counter()
    damages: Counter[str] = Counter()
    failures: list[str] = []
    # The corpus itself first: every request is valid and answered below 500.
    for request in valid:
        answer = await exchange(host, port, request)
        assert answer.status is not None and answer.status < 500 and not problems_of(answer), (
            request[:200],
            answer,
        )
    with watching() as log:
        while len(failures) < 20:
            cases: list[tuple[bytes, list[str]]] = []
            while len(cases) < CONCURRENCY and budget.more():
                original = rng.choice(valid)
                mutators = BLIND + HTTP_AWARE if rng.random() < 0.5 else HTTP_AWARE
                cases.append(mutate(rng, original, valid, mutators))
            if not cases:
                break
            answers = await asyncio.gather(*(exchange(host, port, data) for data, _ in cases))
            logged = log.take()
            for (data, names), answer in zip(cases, answers, strict=True):
                damages.update(names)
                statuses[str(answer.status)] += 1
                for problem in problems_of(answer):
                    failures.append(f"{problem} after {'+'.join(names)}: {data[:600]!r}")
            if logged:
                round_of = "\n  ".join(f"{'+'.join(names)}: {data[:300]!r}" for data, names in cases)
                failures.append(f"log: {logged[:5]}\n  in the round of:\n  {round_of}")
    # Still there, and still serving, after all of it.
    assert (await exchange(host, port, valid[-2])).status == 200
    print(f"\nHTTP fuzz: {budget.describe()}; answers by status {dict(statuses.most_common())}")
    print(f"HTTP fuzz: damage applied {dict(damages.most_common())}; {len(failures)} failures")
    assert not failures, "\n\n".join(failures[:10])


def test_mutations_are_reproducible_from_their_seed() -> None:
    sample = b"POST /graphql HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n\r\n{}"
    first, again = random.Random(7), random.Random(7)
    assert [mutate(first, sample, [sample], BLIND + HTTP_AWARE) for _ in range(20)] == [
        mutate(again, sample, [sample], BLIND + HTTP_AWARE) for _ in range(20)
    ]
