"""Shared operations and helpers of the mail tests."""

from __future__ import annotations

import io
import uuid
from collections.abc import Sequence
from typing import Any

from aiohttp import web
from gql.transport.file_upload import FileVar

from gateway.server.app import SERVICES
from tests.support.client import Account, Api
from tests.support.ids import key

SEND = """mutation($input: EmailInput!) {
  sendEmail(input: $input) {
    id subject body sentAt read folder
    from { login } to { login }
    attachments { filename contentType size chunkCount url }
  }
}"""
FOLDERS = "{ me { folders { label color unreadCount } } }"
FOLDER = """query($label: String!, $first: Int, $after: String) {
  me { folder(label: $label) {
    label unreadCount
    emails(first: $first, after: $after) {
      edges { cursor node { id subject sentAt read hasAttachments from { login firstname } } }
      pageInfo { hasNextPage endCursor }
    }
  } }
}"""
EMAIL = """query($id: ID!) {
  me { email(id: $id) {
    id subject body read folder from { login } to { login }
    attachments { filename contentType size chunkCount url }
  } }
}"""
MARK = """mutation($id: ID!, $read: Boolean) {
  markEmailRead(id: $id, read: $read) { id read folder }
}"""
MOVE = """mutation($id: ID!, $from: String!, $to: String!) {
  moveEmail(id: $id, from: $from, to: $to) { id read folder }
}"""
CREATE_FOLDER = """mutation($label: String!, $color: String) {
  createFolder(label: $label, color: $color) { label color unreadCount }
}"""


def email_input(
    to: list[str], subject: str = "Hello", body: str = "Hi there", **extra: Any
) -> dict[str, Any]:
    return {"input": {"to": to, "subject": subject, "body": body, **extra}}


async def send(
    api: Api, sender: Account, to: list[str], subject: str = "Hello", **extra: Any
) -> dict[str, Any]:
    data = await api.ok(SEND, email_input(to, subject, **extra), token=sender.token)
    return data["sendEmail"]


async def send_files(
    api: Api,
    sender: Account | None,
    to: list[str],
    files: Sequence[tuple[str, bytes, str | None]],
    subject: str = "With files",
) -> Any:
    """sendEmail as a multipart request with ``files`` = [(filename, content, content type)]."""
    uploads = [
        FileVar(io.BytesIO(content), filename=name, content_type=ctype) for name, content, ctype in files
    ]
    return await api.call(
        SEND,
        email_input(to, subject, attachments=uploads),
        token=sender.token if sender else None,
        upload_files=True,
    )


async def unread_counts(api: Api, account: Account) -> dict[str, int]:
    data = await api.ok(FOLDERS, token=account.token)
    return {f["label"]: f["unreadCount"] for f in data["me"]["folders"]}


async def folder_ids(api: Api, account: Account, label: str, first: int = 100) -> list[str]:
    """The stored ids (time-based UUIDs) of a folder's emails, newest first: the same for every
    view of an email, where the global ids of the summaries and the emails differ."""
    data = await api.ok(FOLDER, {"label": label, "first": first}, token=account.token)
    return [key(e["node"]["id"]) for e in data["me"]["folder"]["emails"]["edges"]]


async def stored_chunks(app: web.Application) -> set[tuple[uuid.UUID, int]]:
    """Every chunk key in the keyspace (a scan, fine on a test keyspace)."""
    rows = await app[SERVICES].db.execute_all(
        "SELECT DISTINCT attachment_id, chunk_number FROM attachment_chunks", fetch_size=5000
    )
    return {(r["attachment_id"], r["chunk_number"]) for r in rows}
