"""Multipart uploads built by hand: the spec's order, the map's targets, sizes, and who may upload.

Every refused request answers a coded ``BAD_REQUEST`` (400, or 413 for a size)
and leaves the chunk table as it was: the gateway reads ``operations`` and
``map`` first, checks the operation and the caller, and only then stores file
bytes.
"""

from __future__ import annotations

import asyncio
import json
import resource
import uuid
from collections.abc import AsyncIterator, Iterable
from typing import Any

import aiohttp
from aiohttp import web

from tests.conftest import ServerFactory
from tests.support.client import Account, Api
from tests.support.mail_helpers import SEND, email_input, stored_chunks

Part = tuple[str, str | None, bytes]


def encode(parts: Iterable[Part], boundary: str) -> Iterable[bytes]:
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (
            f'; filename="{filename}"' if filename is not None else ""
        )
        kind = "application/octet-stream" if filename is not None else "text/plain; charset=utf-8"
        head = f"--{boundary}\r\nContent-Disposition: {disposition}\r\nContent-Type: {kind}\r\n\r\n"
        yield head.encode() + content + b"\r\n"
    yield f"--{boundary}--\r\n".encode()


async def post_parts(api: Api, parts: Iterable[Part], account: Account | None) -> tuple[int, dict[str, Any]]:
    """POST ``parts`` as multipart/form-data, streamed (a generator is never held whole)."""
    boundary = uuid.uuid4().hex

    async def body() -> AsyncIterator[bytes]:
        for chunk in encode(parts, boundary):
            yield chunk

    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}", "GraphQL-Preflight": "1"}
    if account is not None:
        headers["Authorization"] = f"Bearer {account.token}"
    async with aiohttp.ClientSession() as http, http.post(api.url, data=body(), headers=headers) as response:
        return response.status, await response.json(content_type=None)


def send_operations(to: str) -> bytes:
    return json.dumps({"query": SEND, "variables": email_input([to], attachments=[None])}).encode()


ONE_FILE_MAP = json.dumps({"0": ["variables.input.attachments.0"]}).encode()


def codes(result: dict[str, Any]) -> list[str]:
    return [e["extensions"]["code"] for e in result["errors"]]


def max_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def test_a_hand_built_upload_in_spec_order_is_stored(api: Api) -> None:
    alice, bob = await api.sign_up("hup"), await api.sign_up("hupb")
    parts = [
        ("operations", None, send_operations(bob.login)),
        ("map", None, ONE_FILE_MAP),
        ("0", "a.txt", b"hi"),
    ]
    status, result = await post_parts(api, parts, alice)
    assert status == 200 and "errors" not in result, result
    assert result["data"]["sendEmail"]["attachments"][0]["size"] == 2


async def test_5000_extra_text_fields_are_refused_at_the_first_without_memory_growth(
    api: Api, app: web.Application
) -> None:
    """80 MB of extra fields after the map, twice: the gateway (in this process) stops at the
    first extra field when signed in, and reads nothing past the map when anonymous."""
    alice, bob = await api.sign_up("flood"), await api.sign_up("floodb")
    before = await stored_chunks(app)
    field = b"x" * (16 * 1024)

    def parts() -> Iterable[Part]:
        yield "operations", None, send_operations(bob.login)
        yield "map", None, ONE_FILE_MAP
        for n in range(5000):
            yield f"extra{n}", None, field

    peak_before = max_rss_kib()
    status, result = await post_parts(api, parts(), alice)
    assert (status, codes(result)) == (400, ["BAD_REQUEST"]), result
    assert "extra0" in result["errors"][0]["message"]
    status, result = await post_parts(api, parts(), None)
    assert (status, codes(result)) == (200, ["UNAUTHENTICATED"]), result
    growth_mib = (max_rss_kib() - peak_before) / 1024
    print(f"\npeak RSS growth while refusing 2 x 5000 fields of 16 KiB: {growth_mib:.1f} MiB")
    assert growth_mib < 20
    assert await stored_chunks(app) == before


async def test_text_fields_before_operations_are_refused(api: Api) -> None:
    parts = [(f"f{n}", None, b"y" * 1024) for n in range(5000)]
    status, result = await post_parts(api, parts, None)
    assert (status, codes(result)) == (400, ["BAD_REQUEST"])
    assert "`operations`, then `map`" in result["errors"][0]["message"]


async def test_refused_multipart_requests_store_nothing(api: Api, app: web.Application) -> None:
    alice, bob = await api.sign_up("hrf"), await api.sign_up("hrfb")
    ops = send_operations(bob.login)
    file = ("0", "a.txt", b"z" * 3000)
    typename = json.dumps({"query": "{ __typename }", "variables": {}}).encode()
    subject_map = json.dumps({"0": ["variables.input.subject"]}).encode()
    cases: dict[str, tuple[list[Part], int, str]] = {
        "file before operations": (
            [file, ("operations", None, ops), ("map", None, ONE_FILE_MAP)],
            400,
            "`map`",
        ),
        "map before operations": (
            [("map", None, ONE_FILE_MAP), ("operations", None, ops), file],
            400,
            "`map`",
        ),
        "file mapped to a String": (
            [("operations", None, ops), ("map", None, subject_map), file],
            400,
            "Upload",
        ),
        "upload to { __typename }": (
            [
                ("operations", None, typename),
                ("map", None, json.dumps({"0": ["variables.x"]}).encode()),
                file,
            ],
            400,
            "mutation",
        ),
        "file not in the map": (
            [("operations", None, ops), ("map", None, ONE_FILE_MAP), file, ("1", "b.txt", b"b")],
            400,
            "'1'",
        ),
        "map entry without a file": ([("operations", None, ops), ("map", None, ONE_FILE_MAP)], 400, "0"),
        "the same file twice": (
            [("operations", None, ops), ("map", None, ONE_FILE_MAP), file, file],
            400,
            "'0'",
        ),
        "a batch of operations": (
            [("operations", None, b"[" + ops + b"]"), ("map", None, ONE_FILE_MAP), file],
            400,
            "batch",
        ),
        "operations not JSON": (
            [("operations", None, b"{nope"), ("map", None, ONE_FILE_MAP), file],
            400,
            "JSON",
        ),
        "map not an object": ([("operations", None, ops), ("map", None, b"[1]"), file], 400, "`map`"),
        "operations over the JSON limit": (
            [("operations", None, b" " * (1024 * 1024 + 1)), ("map", None, ONE_FILE_MAP), file],
            413,
            "1048576",
        ),
        "map over 64 KiB": (
            [("operations", None, ops), ("map", None, b" " * (64 * 1024 + 1)), file],
            413,
            "65536",
        ),
        "path outside variables": (
            [("operations", None, ops), ("map", None, json.dumps({"0": ["query"]}).encode()), file],
            400,
            "variables",
        ),
    }
    before = await stored_chunks(app)
    for name, (parts, status, needle) in cases.items():
        got, result = await post_parts(api, parts, alice)
        assert (got, codes(result)) == (status, ["BAD_REQUEST"]), (name, result)
        assert "data" not in result, name
        assert needle in result["errors"][0]["message"], (name, result)
    assert await stored_chunks(app) == before


async def test_an_anonymous_upload_reads_no_file_and_stores_nothing(api: Api, app: web.Application) -> None:
    bob = await api.sign_up("hanon")
    before = await stored_chunks(app)
    parts = [
        ("operations", None, send_operations(bob.login)),
        ("map", None, ONE_FILE_MAP),
        ("0", "a", b"q" * 5000),
    ]
    status, result = await post_parts(api, parts, None)
    assert (status, codes(result)) == (200, ["UNAUTHENTICATED"])
    assert await stored_chunks(app) == before


async def test_a_json_body_over_the_limit_is_413(api: Api) -> None:
    body = json.dumps({"query": "{ __typename }", "variables": {"pad": "p" * (1024 * 1024)}})
    async with (
        aiohttp.ClientSession() as http,
        http.post(api.url, data=body, headers={"Content-Type": "application/json"}) as response,
    ):
        assert response.status == 413
        result = await response.json(content_type=None)
    assert codes(result) == ["BAD_REQUEST"] and "1048576" in result["errors"][0]["message"]


async def test_a_file_part_with_malformed_headers_is_bad_request(api: Api, app: web.Application) -> None:
    """Headers of a file part are read mid-stream, after the caller is known: an oversized,
    a NUL-bearing or an endless header block is a coded 400, and nothing is stored."""
    alice, bob = await api.sign_up("hdrs"), await api.sign_up("hdrsb")
    lead = (
        b'--b\r\nContent-Disposition: form-data; name="operations"\r\n\r\n'
        + send_operations(bob.login)
        + b'\r\n--b\r\nContent-Disposition: form-data; name="map"\r\n\r\n'
        + ONE_FILE_MAP
        + b"\r\n"
    )
    file_head = b'--b\r\nContent-Disposition: form-data; name="0"; filename="a"\r\n'
    bodies = {
        "a header over 8 KB": lead + file_head + b"X-Pad: " + b"y" * 100_000 + b"\r\n\r\nx\r\n--b--\r\n",
        "20 000 headers": lead + file_head + b"X-Pad: y\r\n" * 20_000 + b"\r\nx\r\n--b--\r\n",
        "a NUL in the disposition": lead
        + b'--b\r\nContent-Disposition: form-data; name="0"; filename="a\x00b"\r\n\r\nx\r\n--b--\r\n',
    }
    headers = {
        "Content-Type": "multipart/form-data; boundary=b",
        "GraphQL-Preflight": "1",
        "Authorization": f"Bearer {alice.token}",
    }
    before = await stored_chunks(app)
    async with aiohttp.ClientSession() as http:
        for name, body in bodies.items():
            async with http.post(api.url, data=body, headers=headers) as response:
                result = await response.json(content_type=None)
                assert (response.status, codes(result)) == (400, ["BAD_REQUEST"]), (name, result)
                assert "Unable to parse the request body" in result["errors"][0]["message"], name
    assert await stored_chunks(app) == before


async def test_an_upload_over_the_rate_limit_is_refused_before_a_file_byte_is_read(
    make_server: ServerFactory,
) -> None:
    """The second email with a file meets the per-user upload limit while its file part has only
    begun: the answer comes though the client holds back the rest of the file, so nothing of it
    was streamed into Cassandra, and the limit is taken once per email, not twice."""
    api, _ = await make_server(rate_uploads="2/h")
    alice, bob = await api.sign_up("uplim"), await api.sign_up("uplimb")
    first = [
        ("operations", None, send_operations(bob.login)),
        ("map", None, ONE_FILE_MAP),
        ("0", "a.txt", b"1"),
    ]
    assert (await post_parts(api, first, alice))[0] == 200
    assert "errors" not in (await post_parts(api, first, alice))[1], "two emails with files fit in 2/h"

    boundary = uuid.uuid4().hex
    opening = b"".join(list(encode(first[:2], boundary))[:2])
    file_head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="0"; filename="b.txt"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    answered = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        # Enough of the file that the map's end is certain (the multipart reader looks ahead).
        yield opening + file_head + b"x" * 65536
        await answered.wait()  # the rest of the file only once the gateway has answered
        yield b"the rest\r\n" + f"--{boundary}--\r\n".encode()

    headers = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "GraphQL-Preflight": "1",
        "Authorization": f"Bearer {alice.token}",
    }

    async def third() -> tuple[int, dict[str, Any]]:
        async with aiohttp.ClientSession() as http, http.post(api.url, data=body(), headers=headers) as r:
            answered.set()
            return r.status, await r.json(content_type=None)

    try:
        # A hang detector, not a speed test: reading the file would wait for ever.
        status, result = await asyncio.wait_for(third(), 30)
    finally:
        answered.set()
    assert (status, codes(result)) == (200, ["RATE_LIMITED"]), result
    assert 1750 < result["errors"][0]["extensions"]["retryAfter"] <= 1800
