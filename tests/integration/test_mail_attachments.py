"""Attachments: multipart uploads streamed into 1000 KiB chunks, and streamed downloads."""

from __future__ import annotations

import hashlib
import os
import uuid
from urllib.parse import quote, urlsplit

import aiohttp
from aiohttp import web

from gateway.mail.attachment_store import CHUNK_SIZE, MAX_ATTACHMENT_BYTES
from gateway.mail.store import MailStore
from gateway.server.app import SERVICES
from tests.support.client import Account, Api
from tests.support.ids import key, uuid_of
from tests.support.mail_helpers import EMAIL, FOLDER, folder_ids, send_files, stored_chunks, unread_counts


async def download(api: Api, path: str, account: Account | None) -> tuple[int, dict[str, str], bytes]:
    """GET a path with the account's bearer token (any signature in the query is dropped)."""
    headers = {"Authorization": f"Bearer {account.token}"} if account else {}
    url = api.base_url + urlsplit(path).path
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as response:
        return response.status, dict(response.headers), await response.read()


async def test_a_2416000_byte_file_is_three_chunks_downloaded_byte_identical(
    api: Api, app: web.Application
) -> None:
    alice, bob, eve = await api.sign_up("att"), await api.sign_up("attb"), await api.sign_up("atte")
    content = os.urandom(2_416_000)
    response = await send_files(api, alice, [bob.login], [("report.bin", content, "application/x-demo")])
    assert not response.errors, response.errors
    email = response.data["sendEmail"]
    [attachment] = email["attachments"]
    url = attachment.pop("url")
    assert attachment == {
        "filename": "report.bin",
        "contentType": "application/x-demo",
        "size": 2_416_000,
        "chunkCount": 3,
    }
    assert url.startswith(f"/attachments/{key(email['id'])}/report.bin?u={alice.login}&exp=")

    # Three chunk partitions in Cassandra: two full ones and the rest.
    record = await app[SERVICES].store(MailStore).email(uuid_of(email["id"]))
    assert record is not None
    attachment_id = record.attachments[0].attachment_id
    rows = [
        await app[SERVICES].db.execute(
            "SELECT data FROM attachment_chunks WHERE attachment_id = ? AND chunk_number = ?",
            (attachment_id, n),
        )
        for n in range(4)
    ]
    sizes = [sum(len(part["data"]) for part in r.rows) if r.rows else None for r in rows]
    assert sizes == [CHUNK_SIZE, CHUNK_SIZE, 2_416_000 - 2 * CHUNK_SIZE, None]

    listed = await api.ok(FOLDER, {"label": "inbox"}, token=bob.token)
    assert listed["me"]["folder"]["emails"]["edges"][0]["node"]["hasAttachments"] is True

    for reader in (bob, alice):
        status, headers, body = await download(api, url, reader)
        assert status == 200
        assert hashlib.sha256(body).hexdigest() == hashlib.sha256(content).hexdigest()
        assert headers["Content-Type"] == "application/x-demo"
        assert headers["Content-Length"] == "2416000"
        assert headers["Content-Disposition"].startswith('attachment; filename="report.bin"')
        assert headers["X-Content-Type-Options"] == "nosniff"

    assert (await download(api, url, eve))[0] == 404
    status, headers, _ = await download(api, url, None)
    assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")
    bad_token = Account(login="x", token="not-a-token", password="")
    assert (await download(api, url, bad_token))[0] == 401
    for path in (
        f"/attachments/{uuid.uuid1()}/report.bin",  # a guessed id
        f"/attachments/{uuid.uuid4()}/report.bin",
        "/attachments/not-a-uuid/report.bin",
        f"/attachments/{key(email['id'])}/other.bin",
    ):
        assert (await download(api, path, bob))[0] == 404, path


async def test_empty_and_non_ascii_and_unsafe_names(api: Api) -> None:
    alice, bob = await api.sign_up("names"), await api.sign_up("namesb")
    name = "Résumé – 日本語.pdf"
    response = await send_files(
        api,
        alice,
        [bob.login],
        [
            ("empty.txt", b"", "text/plain"),
            (name, b"%PDF-1.7 tiny", None),
            ("../../etc/passwd", b"root:x:0:0", "text/plain"),
            ("C:\\Users\\me\\notes.txt", b"one", "text/plain"),
            ("notes.txt", b"two", "text/plain"),
        ],
    )
    assert not response.errors, response.errors
    email = response.data["sendEmail"]
    files = {a["filename"]: a for a in email["attachments"]}
    assert list(files) == ["empty.txt", name, "passwd", "notes.txt", "notes (2).txt"]
    assert (files["empty.txt"]["size"], files["empty.txt"]["chunkCount"]) == (0, 0)
    assert files[name]["contentType"] == "application/pdf"  # guessed from the name
    assert urlsplit(files[name]["url"]).path == f"/attachments/{key(email['id'])}/{quote(name, safe='')}"

    status, headers, body = await download(api, files["empty.txt"]["url"], bob)
    assert (status, body, headers["Content-Length"]) == (200, b"", "0")

    status, headers, body = await download(api, files[name]["url"], bob)
    assert (status, body) == (200, b"%PDF-1.7 tiny")
    disposition = headers["Content-Disposition"]
    assert "filename*=UTF-8''R%C3%A9sum%C3%A9%20%E2%80%93%20%E6%97%A5%E6%9C%AC%E8%AA%9E.pdf" in disposition
    assert disposition.startswith('attachment; filename="Resume  .pdf"')  # an ASCII fallback

    for filename, content in (("passwd", b"root:x:0:0"), ("notes.txt", b"one"), ("notes (2).txt", b"two")):
        assert (await download(api, files[filename]["url"], bob))[2] == content
    shown = await api.ok(EMAIL, {"id": email["id"]}, token=bob.token)
    assert [a["filename"] for a in shown["me"]["email"]["attachments"]] == list(files)


async def test_an_upload_over_the_limit_is_refused_and_stores_nothing(api: Api, app: web.Application) -> None:
    alice, bob = await api.sign_up("big"), await api.sign_up("bigb")
    before = await stored_chunks(app)
    response = await send_files(
        api,
        alice,
        [bob.login],
        [("small.txt", b"fits", "text/plain"), ("huge.bin", b"\0" * (MAX_ATTACHMENT_BYTES + 1), None)],
    )
    assert response.codes == ["BAD_USER_INPUT"], response.errors
    assert response.errors[0]["extensions"]["field"] == "attachments"
    assert "huge.bin" in response.errors[0]["message"]
    assert await stored_chunks(app) == before  # neither file kept a chunk
    assert await folder_ids(api, alice, "sent") == []
    assert await unread_counts(api, bob) == {"inbox": 0, "sent": 0}

    # Exactly the limit is fine.
    exact = await send_files(api, alice, [bob.login], [("max.bin", b"\1" * MAX_ATTACHMENT_BYTES, None)])
    assert not exact.errors, exact.errors
    assert exact.data["sendEmail"]["attachments"][0]["chunkCount"] == 26


async def test_failed_sends_and_anonymous_uploads_leave_no_chunks(api: Api, app: web.Application) -> None:
    alice, bob = await api.sign_up("orph"), await api.sign_up("orphb")
    before = await stored_chunks(app)
    unknown = await send_files(api, alice, ["nobody-here"], [("a.txt", b"x" * 3000, "text/plain")])
    assert unknown.codes == ["BAD_USER_INPUT"] and unknown.errors[0]["extensions"]["field"] == "to"
    anonymous = await send_files(api, None, [bob.login], [("a.txt", b"x" * 3000, "text/plain")])
    assert anonymous.codes == ["UNAUTHENTICATED"]
    bad_subject = await send_files(
        api, alice, [bob.login], [("a.txt", b"x" * 3000, "text/plain")], subject="s" * 500
    )
    assert bad_subject.codes == ["BAD_USER_INPUT"]
    assert await stored_chunks(app) == before
