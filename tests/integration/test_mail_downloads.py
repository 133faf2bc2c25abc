"""Attachment downloads as browsers and download managers use them: byte ranges, ETags,
signed links, inline images."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import aiohttp
import pytest
from multidict import CIMultiDict

from gateway.mail.attachment_store import CHUNK_SIZE
from gateway.settings import Settings, SettingsError
from tests.conftest import ServerFactory
from tests.support.client import Account, Api
from tests.support.ids import key as stored_id
from tests.support.mail_helpers import EMAIL, send_files

SIZE = 2_416_000  # three chunks: two full ones and the rest
WITH_EXPIRY = EMAIL.replace("url", "url urlExpiresAt")

Answer = tuple[int, CIMultiDict[str], bytes]


async def fetch(url: str, account: Account | None = None, method: str = "GET", **headers: str) -> Answer:
    if account is not None:
        headers["Authorization"] = f"Bearer {account.token}"
    async with aiohttp.ClientSession() as http, http.request(method, url, headers=headers) as response:
        return response.status, response.headers.copy(), await response.read()


def bare(api: Api, url: str) -> str:
    """The URL without its signature: only a bearer token opens it."""
    return api.base_url + urlsplit(url).path


def with_query(url: str, **changes: str | None) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    return parts._replace(query=urlencode(query)).geturl()


@pytest.fixture(scope="module")
async def shared(api: Api) -> dict[str, Any]:
    """One three-chunk file from alice to bob."""
    alice, bob = await api.sign_up("rng"), await api.sign_up("rngb")
    content = os.urandom(SIZE)
    response = await send_files(api, alice, [bob.login], [("video.bin", content, "application/x-demo")])
    assert not response.errors, response.errors
    email = response.result["sendEmail"]
    url = api.base_url + email["attachments"][0]["url"]  # a path on the API's origin
    return {"alice": alice, "bob": bob, "content": content, "email": email, "url": url}


@pytest.fixture
def statements(caplog: pytest.LogCaptureFixture) -> Iterator[list[int]]:
    """CQL statement counts of the downloads answered while the test runs, in order."""
    counts: list[int] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if hasattr(record, "cql_statements"):
                counts.append(record.cql_statements)

    logger = logging.getLogger("gateway.mail.routes")
    handler, level = Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield counts
    logger.removeHandler(handler)
    logger.setLevel(level)


async def counted(statements: list[int], n: int) -> list[int]:
    """The counts once ``n`` downloads have reported (the handler logs as it finishes)."""
    for _ in range(500):
        if len(statements) >= n:
            break
        await asyncio.sleep(0.01)
    return statements


async def test_single_ranges_answer_206_with_exactly_those_bytes(api: Api, shared: dict[str, Any]) -> None:
    url, content = bare(api, shared["url"]), shared["content"]
    bob = shared["bob"]
    cases = {
        "bytes=0-99": (0, 100),
        # Across the boundary of chunks 0 and 1.
        f"bytes={CHUNK_SIZE - 1000}-{CHUNK_SIZE + 999}": (CHUNK_SIZE - 1000, CHUNK_SIZE + 1000),
        "bytes=-500": (SIZE - 500, SIZE),
        "bytes=2000000-": (2_000_000, SIZE),
        f"bytes={SIZE - 10}-{SIZE + 5000}": (SIZE - 10, SIZE),  # clipped to the end
        f"bytes=-{SIZE * 2}": (0, SIZE),
    }
    for header, (start, stop) in cases.items():
        status, headers, body = await fetch(url, bob, Range=header)
        assert status == 206, header
        assert headers["Content-Range"] == f"bytes {start}-{stop - 1}/{SIZE}", header
        assert headers["Content-Length"] == str(stop - start)
        assert headers["Accept-Ranges"] == "bytes"
        assert body == content[start:stop], header

    status, headers, body = await fetch(url, bob)
    assert (status, headers["Accept-Ranges"], headers["Content-Length"]) == (200, "bytes", str(SIZE))
    assert "Content-Range" not in headers and body == content

    status, headers, body = await fetch(url, bob, method="HEAD", Range="bytes=100-199")
    assert (status, headers["Content-Range"], headers["Content-Length"], body) == (
        206,
        f"bytes 100-199/{SIZE}",
        "100",
        b"",
    )


async def test_unsatisfiable_multiple_and_malformed_ranges(api: Api, shared: dict[str, Any]) -> None:
    url, content, bob = bare(api, shared["url"]), shared["content"], shared["bob"]
    for header in (f"bytes={SIZE}-", f"bytes={SIZE + 10}-{SIZE + 20}", "bytes=-0"):
        status, headers, body = await fetch(url, bob, Range=header)
        assert (status, headers["Content-Range"]) == (416, f"bytes */{SIZE}"), header
    # Several ranges, or a header that does not parse: the whole file (RFC 9110 lets a server ignore Range).
    for header in ("bytes=0-1,5-6", "bytes=9-3", "items=0-5", "bytes=abc"):
        status, headers, body = await fetch(url, bob, Range=header)
        assert (status, len(body)) == (200, SIZE), header
        assert body == content


async def test_etag_if_none_match_and_if_range(api: Api, shared: dict[str, Any]) -> None:
    url, content, bob, alice = bare(api, shared["url"]), shared["content"], shared["bob"], shared["alice"]
    status, headers, _ = await fetch(url, bob, method="HEAD")
    etag = headers["ETag"]
    assert status == 200 and headers["Content-Length"] == str(SIZE)
    assert etag.startswith('"') and etag.endswith('"')  # strong
    assert (await fetch(url, alice, method="HEAD"))[1]["ETag"] == etag  # one file, one tag

    for value in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        status, headers, body = await fetch(url, bob, **{"If-None-Match": value})
        assert (status, body, headers["ETag"]) == (304, b"", etag), value
    status, _, body = await fetch(url, bob, **{"If-None-Match": '"something-else"'})
    assert (status, body) == (200, content)

    # If-Range: the range applies only while the client's copy is this one.
    status, _, body = await fetch(url, bob, Range="bytes=10-19", **{"If-Range": etag})
    assert (status, body) == (206, content[10:20])
    for stale in ('"something-else"', "Tue, 01 Jan 2030 00:00:00 GMT", f"W/{etag}"):
        status, _, body = await fetch(url, bob, Range="bytes=10-19", **{"If-Range": stale})
        assert (status, len(body)) == (200, SIZE), stale


async def test_a_range_reads_only_the_chunks_that_hold_it(
    api: Api, shared: dict[str, Any], statements: list[int]
) -> None:
    bob, signed = shared["bob"], shared["url"]
    url = bare(api, signed)
    inside_chunk_1 = f"bytes={CHUNK_SIZE + 10}-{CHUNK_SIZE + 20}"
    spanning = f"bytes={CHUNK_SIZE - 10}-{CHUNK_SIZE + 10}"
    # Bob's session is known to the process since his sign-up: no request reads it.
    assert (await fetch(url, bob, Range=inside_chunk_1))[0] == 206  # email, chunk 1
    assert (await fetch(url, bob, Range=spanning))[0] == 206  # email, chunks 0 and 1
    assert (await fetch(url, bob))[0] == 200  # email, three chunks
    assert (await fetch(signed, Range=inside_chunk_1))[0] == 206  # email, chunk 1
    assert (await fetch(url, bob, **{"If-None-Match": '"x", *'}))[0] == 304  # email
    assert await counted(statements, 5) == [2, 3, 4, 2, 1]


async def test_a_signed_link_works_without_a_header_until_it_expires(
    api: Api, shared: dict[str, Any], make_server: ServerFactory
) -> None:
    url, content, alice, bob = shared["url"], shared["content"], shared["alice"], shared["bob"]
    status, headers, body = await fetch(url)
    assert (status, body) == (200, content)
    assert headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
    status, _, body = await fetch(url, Range="bytes=-100")
    assert (status, body) == (206, content[-100:])

    # Bob's own query gives him his own link, which works for him likewise.
    shown = await api.ok(WITH_EXPIRY, {"id": shared["email"]["id"]}, token=bob.token)
    [attachment] = shown["me"]["email"]["attachments"]
    assert parse_qs(urlsplit(attachment["url"]).query)["u"] == [bob.login]
    assert (await fetch(api.base_url + attachment["url"]))[2] == content
    expires_at = datetime.fromisoformat(attachment["urlExpiresAt"].replace("Z", "+00:00")).timestamp()
    assert time.time() + 900 - 5 <= expires_at <= time.time() + 900 + 60 + 5

    other = url.replace("video.bin", "other.bin")
    sig = parse_qs(urlsplit(url).query)["sig"][0]
    tampered = {
        "signature": with_query(url, sig=("A" if sig[0] != "A" else "B") + sig[1:]),
        "viewer": with_query(url, u=bob.login),
        "expiry": with_query(url, exp=str(int(parse_qs(urlsplit(url).query)["exp"][0]) + 3600)),
        "no expiry": with_query(url, exp=None),
        "no viewer": with_query(url, u=None),
        "another file": other,
        "empty signature": with_query(url, sig=""),
    }
    for what, forged in tampered.items():
        status, _, body = await fetch(forged)
        assert status == 403, what
        assert body != content
    # A bad signature is refused even with a valid bearer token: the link decides.
    assert (await fetch(tampered["signature"], alice))[0] == 403
    # The bearer header keeps working on the plain path.
    assert (await fetch(bare(api, url), alice))[2] == content

    short, _ = await make_server(download_url_ttl_seconds=3, public_url="https://files.example.com/mail")
    shown = await short.ok(WITH_EXPIRY, {"id": shared["email"]["id"]}, token=bob.token)
    [attachment] = shown["me"]["email"]["attachments"]
    assert attachment["url"].startswith(
        f"https://files.example.com/mail/attachments/{stored_id(shared['email']['id'])}/"
    )
    # As a reverse proxy that serves the gateway under /mail would pass it on.
    local = attachment["url"].replace("https://files.example.com/mail", short.base_url)
    assert (await fetch(local, Range="bytes=0-9"))[2] == content[:10]
    expires_at = datetime.fromisoformat(attachment["urlExpiresAt"].replace("Z", "+00:00")).timestamp()
    await asyncio.sleep(max(0.0, expires_at - time.time()) + 0.2)
    status, _, body = await fetch(local)
    assert (status, body != content) == (403, True)


async def test_attachment_urls_never_take_the_request_host(
    api: Api, shared: dict[str, Any], make_server: ServerFactory
) -> None:
    """A forged ``Host`` (or ``X-Forwarded-Host``) never reaches a link a client is handed: without
    ``GATEWAY_PUBLIC_URL`` the link is a path on the API's own origin, with it the configured origin."""
    bob, email_id = shared["bob"], shared["email"]["id"]
    forged = {
        "Host": "attacker.example",
        "X-Forwarded-Host": "attacker.example",
        "X-Forwarded-Proto": "https",
    }
    shown = await api.ok(EMAIL, {"id": email_id}, token=bob.token, headers=forged)
    url = shown["me"]["email"]["attachments"][0]["url"]
    assert "attacker" not in url
    assert url.startswith(f"/attachments/{stored_id(email_id)}/video.bin?u={bob.login}&exp="), url
    assert (await fetch(api.base_url + url, Range="bytes=0-9"))[2] == shared["content"][:10]

    public, _ = await make_server(public_url="https://files.example.com/mail")
    shown = await public.ok(EMAIL, {"id": email_id}, token=bob.token, headers=forged)
    assert shown["me"]["email"]["attachments"][0]["url"].startswith(
        f"https://files.example.com/mail/attachments/{stored_id(email_id)}/video.bin?"
    )


async def test_a_process_without_a_signing_secret_signs_for_itself_only(
    api: Api, shared: dict[str, Any], make_server: ServerFactory
) -> None:
    lone, _ = await make_server(url_signing_secret="")
    bob = shared["bob"]
    shown = await lone.ok(EMAIL, {"id": shared["email"]["id"]}, token=bob.token)
    url = shown["me"]["email"]["attachments"][0]["url"]
    assert (await fetch(lone.base_url + url))[2] == shared["content"]
    assert (await fetch(api.base_url + url))[0] == 403


async def test_safe_images_are_shown_inline_and_everything_else_is_saved(api: Api) -> None:
    alice, bob = await api.sign_up("inl"), await api.sign_up("inlb")
    png = b"\x89PNG\r\n\x1a\n" + os.urandom(64)
    files = [
        ("photo.png", png, "image/png"),
        ("photo.jpg", b"\xff\xd8\xff" + os.urandom(32), "image/jpeg"),
        ("anim.gif", b"GIF89a", "image/gif"),
        ("pic.webp", b"RIFF....WEBP", "image/webp"),
        ("page.html", b"<script>alert(1)</script>", "text/html"),
        ("drawing.svg", b"<svg onload='alert(1)'/>", "image/svg+xml"),
        ("fake.png", b"<html><script>alert(1)</script>", "text/html"),
    ]
    response = await send_files(api, alice, [bob.login], files)
    assert not response.errors, response.errors
    urls = {a["filename"]: a["url"] for a in response.result["sendEmail"]["attachments"]}
    for filename, content, _ in files:
        status, headers, body = await fetch(api.base_url + urls[filename])
        assert (status, body) == (200, content)
        disposition = "inline" if filename.split(".")[1] in {"png", "jpg", "gif", "webp"} else "attachment"
        if filename == "fake.png":
            disposition = "attachment"  # the declared type decides, not the name
        assert headers["Content-Disposition"].startswith(f'{disposition}; filename="{filename}"'), filename
        assert headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_signing_settings_are_checked_at_start(base_settings: Settings) -> None:
    cluster = replace(base_settings, contact_points=("10.0.0.1",), url_signing_secret="")
    with pytest.raises(SettingsError) as error:
        cluster.validate()
    assert error.value.variable == "GATEWAY_URL_SIGNING_SECRET"
    with pytest.raises(SettingsError) as error:
        replace(base_settings, url_signing_secret="short").validate()
    assert error.value.variable == "GATEWAY_URL_SIGNING_SECRET"
    replace(cluster, url_signing_secret="s" * 32).validate()
    replace(base_settings, url_signing_secret="").validate()  # embedded: a random key, with a warning
    for bad in ("files.example.com", "ftp://x", "https://x/?a=1", "https://"):
        with pytest.raises(SettingsError) as error:
            replace(base_settings, public_url=bad).validate()
        assert error.value.variable == "GATEWAY_PUBLIC_URL", bad
    with pytest.raises(SettingsError) as error:
        replace(base_settings, download_url_ttl_seconds=0).validate()
    assert error.value.variable == "GATEWAY_DOWNLOAD_URL_TTL_SECONDS"
