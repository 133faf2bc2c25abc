"""Attachment downloads from a page on another origin: the preflight for ``Range``,
``If-None-Match`` and ``Authorization`` passes, and the page can read the headers a
ranged or resumed download needs. Over real HTTP, as a browser sends it."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp import hdrs
from multidict import CIMultiDictProxy

from tests.conftest import ServerFactory
from tests.support.client import Api
from tests.support.mail_helpers import send_files

APP = "http://localhost:3000"
OTHER = "https://evil.example"
SIZE = 5000
DOWNLOAD_HEADERS = ("Content-Range", "Accept-Ranges", "ETag", "Content-Disposition", "Content-Length")

Answer = tuple[int, CIMultiDictProxy[str], bytes]


@pytest.fixture
async def download(make_server: ServerFactory) -> dict[str, Any]:
    """A gateway that lets ``APP`` call it, and one attachment from alice to bob on it."""
    api, _ = await make_server(cors_origins=(APP,))
    alice, bob = await api.sign_up("corsdl"), await api.sign_up("corsdlb")
    content = os.urandom(SIZE)
    response = await send_files(api, alice, [bob.login], [("clip.bin", content, "application/x-demo")])
    assert not response.errors, response.errors
    signed = api.base_url + response.result["sendEmail"]["attachments"][0]["url"]
    return {
        "bob": bob,
        "content": content,
        "signed": signed,
        "bare": api.base_url + urlsplit(signed).path,
    }


async def request(method: str, url: str, **headers: str) -> Answer:
    async with aiohttp.ClientSession() as http, http.request(method, url, headers=headers) as r:
        return r.status, r.headers, await r.read()


def exposed(headers: CIMultiDictProxy[str]) -> set[str]:
    return {h.strip().lower() for h in headers.get(hdrs.ACCESS_CONTROL_EXPOSE_HEADERS, "").split(",")}


@pytest.mark.parametrize("method", ["GET", "HEAD"])
async def test_the_preflight_for_a_ranged_authorized_download_passes(
    download: dict[str, Any], method: str
) -> None:
    status, headers, _ = await request(
        "OPTIONS",
        download["bare"],
        Origin=APP,
        **{
            hdrs.ACCESS_CONTROL_REQUEST_METHOD: method,
            hdrs.ACCESS_CONTROL_REQUEST_HEADERS: "authorization,if-none-match,range",
        },
    )
    assert status == 200
    assert headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] == APP
    assert headers[hdrs.ACCESS_CONTROL_ALLOW_METHODS] == method
    allowed = {h.strip().lower() for h in headers[hdrs.ACCESS_CONTROL_ALLOW_HEADERS].split(",")}
    assert {"authorization", "if-none-match", "range"} <= allowed
    assert headers[hdrs.ACCESS_CONTROL_ALLOW_CREDENTIALS] == "true"

    status, headers, _ = await request(
        "OPTIONS",
        download["bare"],
        Origin=OTHER,
        **{hdrs.ACCESS_CONTROL_REQUEST_METHOD: "GET", hdrs.ACCESS_CONTROL_REQUEST_HEADERS: "range"},
    )
    assert status == 403
    assert hdrs.ACCESS_CONTROL_ALLOW_ORIGIN not in headers


async def test_a_ranged_download_exposes_what_a_page_needs(download: dict[str, Any]) -> None:
    bob, content = download["bob"], download["content"]
    status, headers, body = await request(
        "GET", download["bare"], Origin=APP, Range="bytes=100-1099", Authorization=f"Bearer {bob.token}"
    )
    assert status == 206
    assert body == content[100:1100]
    assert headers[hdrs.CONTENT_RANGE] == f"bytes 100-1099/{SIZE}"
    assert headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] == APP
    assert headers[hdrs.ACCESS_CONTROL_ALLOW_CREDENTIALS] == "true"
    assert "Origin" in headers[hdrs.VARY]
    assert {h.lower() for h in DOWNLOAD_HEADERS} <= exposed(headers)
    for name in DOWNLOAD_HEADERS:
        assert name in headers, name

    status, headers, body = await request(
        "GET", download["bare"], Origin=OTHER, Range="bytes=0-9", Authorization=f"Bearer {bob.token}"
    )
    assert (status, body) == (206, content[:10])
    assert hdrs.ACCESS_CONTROL_ALLOW_ORIGIN not in headers
    assert hdrs.ACCESS_CONTROL_EXPOSE_HEADERS not in headers


async def test_a_revalidation_and_a_signed_link_are_readable_cross_origin(download: dict[str, Any]) -> None:
    bob, content = download["bob"], download["content"]
    status, headers, body = await request("GET", download["signed"], Origin=APP)
    assert (status, body) == (200, content)
    assert headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] == APP
    assert "etag" in exposed(headers)
    etag = headers[hdrs.ETAG]

    status, headers, body = await request(
        "GET", download["bare"], Origin=APP, Authorization=f"Bearer {bob.token}", **{hdrs.IF_NONE_MATCH: etag}
    )
    assert (status, body) == (304, b"")
    assert headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] == APP
    assert headers[hdrs.ETAG] == etag


async def test_refusals_reach_the_page_as_statuses(download: dict[str, Any]) -> None:
    """A refusal without CORS headers is a bare network error to the page; with them it can
    tell "sign in" (401) and "fresh link needed" (403) apart."""
    status, headers, _ = await request("GET", download["bare"], Origin=APP)
    assert status == 401
    assert headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] == APP
    status, headers, _ = await request("GET", download["signed"].replace("sig=", "sig=0"), Origin=APP)
    assert status == 403
    assert headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] == APP


async def test_without_origins_downloads_carry_no_cors_headers(api: Api, download: dict[str, Any]) -> None:
    """The same download from the gateway without ``GATEWAY_CORS_ORIGINS``: same-origin only."""
    path = urlsplit(download["bare"]).path
    status, headers, _ = await request(
        "OPTIONS",
        api.base_url + path,
        Origin=APP,
        **{hdrs.ACCESS_CONTROL_REQUEST_METHOD: "GET", hdrs.ACCESS_CONTROL_REQUEST_HEADERS: "range"},
    )
    assert status == 405
    assert hdrs.ACCESS_CONTROL_ALLOW_ORIGIN not in headers
