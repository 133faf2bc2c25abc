"""Responses over 1 KiB are compressed when the client accepts it; small ones and downloads are not."""

from __future__ import annotations

import gzip
import json
from typing import Any

import aiohttp
import brotli
import pytest

from tests.support.client import Account, Api
from tests.support.mail_helpers import send_files

PAGE = """query($with: String!) {
  me { conversation(with: $with) { messages(first: 50) { nodes { id content sentAt sender { login } } } } }
}"""
SEND = "mutation($to: String!, $content: String!) { sendMessage(to: $to, content: $content) { id } }"


async def raw_post(
    api: Api, body: dict[str, Any], token: str | None, accept_encoding: str | None
) -> tuple[dict[str, str], bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if accept_encoding is not None:
        headers["Accept-Encoding"] = accept_encoding
    # Without skipping it, aiohttp's client would send its own Accept-Encoding.
    async with (
        aiohttp.ClientSession(auto_decompress=False, skip_auto_headers=["Accept-Encoding"]) as http,
        http.post(api.url, json=body, headers=headers) as response,
    ):
        assert response.status == 200
        return dict(response.headers), await response.read()


@pytest.fixture(scope="module")
async def conversation(api: Api) -> tuple[Account, Account]:
    alice, bob = await api.sign_up("gzipa"), await api.sign_up("gzipb")
    for n in range(50):
        await api.ok(SEND, {"to": bob.login, "content": f"message {n} " + "x" * 40}, token=alice.token)
    return alice, bob


@pytest.mark.parametrize(("accept", "coding"), [("gzip", "gzip"), ("gzip, deflate, br", "br")])
async def test_a_50_message_page_comes_back_compressed(
    api: Api, conversation: tuple[Account, Account], accept: str, coding: str
) -> None:
    alice, bob = conversation
    body = {"query": PAGE, "variables": {"with": bob.login}}
    plain_headers, plain = await raw_post(api, body, alice.token, None)
    headers, compressed = await raw_post(api, body, alice.token, accept)

    assert "Content-Encoding" not in plain_headers
    assert len(plain) > 1024
    assert headers["Content-Encoding"] == coding
    assert "Accept-Encoding" in headers["Vary"]
    decoded = gzip.decompress(compressed) if coding == "gzip" else brotli.decompress(compressed)
    page = json.loads(decoded)["data"]
    assert page == json.loads(plain)["data"]
    assert len(page["me"]["conversation"]["messages"]["nodes"]) == 50
    assert len(compressed) < len(plain) / 3
    print(f"50-message page: {len(plain)} bytes, {len(compressed)} {coding}")


async def test_gzip_is_chosen_when_brotli_is_refused(api: Api, conversation: tuple[Account, Account]) -> None:
    alice, bob = conversation
    body = {"query": PAGE, "variables": {"with": bob.login}}
    headers, _ = await raw_post(api, body, alice.token, "br;q=0, gzip")
    assert headers["Content-Encoding"] == "gzip"


async def test_a_tiny_response_is_not_compressed(api: Api) -> None:
    headers, raw = await raw_post(api, {"query": "{ __typename }"}, None, "gzip, br")
    assert "Content-Encoding" not in headers
    assert json.loads(raw)["data"] == {"__typename": "Query"}


async def test_attachment_downloads_are_sent_as_stored(api: Api) -> None:
    alice, bob = await api.sign_up("gzipm"), await api.sign_up("gzipn")
    content = b"compressible text " * 1000
    response = await send_files(api, alice, [bob.login], [("notes.txt", content, "text/plain")])
    assert not response.errors, response.errors
    [attachment] = response.data["sendEmail"]["attachments"]
    headers = {"Authorization": f"Bearer {bob.token}", "Accept-Encoding": "gzip, br"}
    async with (
        aiohttp.ClientSession(auto_decompress=False) as http,
        http.get(api.base_url + attachment["url"], headers=headers) as download,
    ):
        assert download.status == 200
        assert "Content-Encoding" not in download.headers
        assert await download.read() == content
