"""Mail: the mailbox screen (Q1+Q2), one email (Q3), sending, marking read, and attachment
download throughput, each through the gateway beside the same reads on the driver.

Run: ``.venv/bin/python -m bench.bench_mail``.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any
from urllib.parse import urljoin

import aiohttp

from bench.harness import (
    Stats,
    Target,
    counted,
    floor_read,
    floor_under_test,
    gateway_under_test,
    measure,
    report,
    side_by_side,
)
from gateway.graph.node import parse_global_id
from gateway.mail.attachment_store import AttachmentStore
from gateway.mail.store import MailStore
from gateway.users.store import SessionStore, UserStore

REQUESTS = 1000
CONCURRENCY = 16
DOWNLOADS = 150
DOWNLOAD_CONCURRENCY = 8
ATTACHMENT_BYTES = 2_416_000
SENDERS = 10
INBOX_SIZE = 60

MAILBOX = """{ me {
  folders { label color unreadCount }
  folder(label: "inbox") { emails(first: 20) {
    edges { cursor node { id subject sentAt read hasAttachments from { login firstname lastname } } }
    pageInfo { hasNextPage endCursor }
  } }
} }"""
EMAIL = """query($id: ID!) { me { email(id: $id) {
  id subject body sentAt read folder from { login firstname } to { login firstname }
  attachments { filename contentType size url }
} } }"""
SEND = """mutation($input: EmailInput!) { sendEmail(input: $input) { id } }"""
MARK = """mutation($id: ID!, $read: Boolean) { markEmailRead(id: $id, read: $read) { id read } }"""


async def _upload(target: Target, token: str, to: str, content: bytes) -> dict[str, Any]:
    form = aiohttp.FormData()
    form.add_field(
        "operations",
        '{"query": "mutation($input: EmailInput!) { sendEmail(input: $input)'
        ' { id attachments { url } } }", "variables": {"input": {"to": ["' + to + '"],'
        ' "subject": "report", "body": "attached", "attachments": [null]}}}',
    )
    form.add_field("map", '{"0": ["variables.input.attachments.0"]}')
    form.add_field("0", content, filename="report.bin", content_type="application/octet-stream")
    async with target.http.post(
        target.url, data=form, headers={"Authorization": f"Bearer {token}", "GraphQL-Preflight": "1"}
    ) as r:
        body: dict[str, Any] = await r.json()
    assert not body.get("errors"), body
    return body["data"]["sendEmail"]


async def main() -> None:
    async with gateway_under_test() as target, floor_under_test(target) as floor:
        reader = await target.sign_up("reader")
        senders = [await target.sign_up(f"sender{i}") for i in range(SENDERS)]
        for i in range(INBOX_SIZE):
            await target.graphql(
                SEND,
                {"input": {"to": ["reader"], "subject": f"Hello {i}", "body": "Lorem ipsum " * 40}},
                token=senders[i % SENDERS],
            )
        content = os.urandom(ATTACHMENT_BYTES)
        email = await _upload(target, senders[0], "reader", content)
        email_id = email["id"]
        base = target.url.removesuffix("/graphql")
        download_url = urljoin(base, email["attachments"][0]["url"])

        mail = MailStore(target.db, target.settings)
        attachments = AttachmentStore(target.db, target.settings)
        users = UserStore(target.db, target.settings)
        sessions = SessionStore(target.db, target.settings)
        # The email's global id is "Email:<owner>:<uuid>", base64.
        email_uuid = uuid.UUID(parse_global_id(email_id)[1].rsplit(":", 1)[1])
        record = await mail.email(email_uuid)
        assert record is not None
        attachment = record.attachments[0]

        async def mailbox_raw() -> None:
            login = await sessions.login_of(reader)
            assert login is not None
            await mail.folders(login)
            await mail.unread_counts(login)
            page = await mail.folder_page(login, "inbox", size=20, cursor=None)
            await users.get_many({entry.sender for _, entry in page.items})

        async def email_raw() -> None:
            login = await sessions.login_of(reader)
            assert login is not None
            found = await mail.email(email_uuid)
            assert found is not None
            await mail.placement(login, found)
            await users.get_many([found.sender, *found.recipients])

        async def download(_: int) -> None:
            async with target.http.get(download_url, headers={"Authorization": f"Bearer {reader}"}) as r:
                assert r.status == 200
                received = 0
                async for piece in r.content.iter_chunked(256 * 1024):
                    received += len(piece)
                assert received == ATTACHMENT_BYTES

        async def download_raw() -> None:
            received = 0
            async for parts in attachments.chunks(attachment.attachment_id, attachment.chunk_count):
                received += sum(len(p) for p in parts)
            assert received == ATTACHMENT_BYTES

        marks = [0]

        async def mark(_: int) -> dict[str, Any]:
            marks[0] += 1
            return await target.graphql(MARK, {"id": email_id, "read": marks[0] % 2 == 0}, token=reader)

        rows = [
            *await side_by_side(
                (
                    "gateway: mailbox (folders + inbox page of 20)",
                    lambda _: target.graphql(MAILBOX, token=reader),
                ),
                (
                    "floor:   HTTP + the same stores, no GraphQL",
                    lambda _: floor_read(floor, MAILBOX, token=reader),
                ),
                (
                    "driver:  same reads via the stores",
                    lambda _: counted(mailbox_raw()),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            *await side_by_side(
                (
                    "gateway: me.email(id)",
                    lambda _: target.graphql(EMAIL, {"id": email_id}, token=reader),
                ),
                (
                    "driver:  session + email + placement + users",
                    lambda _: counted(email_raw()),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            await measure(
                "gateway: sendEmail to 1 recipient",
                lambda i: target.graphql(
                    SEND,
                    {"input": {"to": ["reader"], "subject": f"b{i}", "body": "x"}},
                    token=senders[i % SENDERS],
                ),
                requests=REQUESTS // 2,
                concurrency=CONCURRENCY,
            ),
            await measure(
                "gateway: markEmailRead, one email, flip races",
                mark,
                requests=REQUESTS // 2,
                concurrency=CONCURRENCY,
            ),
        ]
        report(f"mail ({REQUESTS} requests, concurrency {CONCURRENCY})", rows)

        transfers = [
            *await side_by_side(
                (
                    "gateway: GET /attachments (2.4 MB, 3 chunks)",
                    download,
                ),
                (
                    "driver:  read the same 3 chunks",
                    lambda _: counted(download_raw()),
                ),
                requests=DOWNLOADS,
                concurrency=DOWNLOAD_CONCURRENCY,
                warmup=5,
            ),
        ]
        report(f"attachment download ({DOWNLOADS} downloads, concurrency {DOWNLOAD_CONCURRENCY})", transfers)
        _throughput(transfers)


def _throughput(rows: list[Stats]) -> None:
    for row in rows:
        print(f"{row.name:<44} {row.rps * ATTACHMENT_BYTES / 1e6:>9.1f} MB/s")


if __name__ == "__main__":
    asyncio.run(main())
