"""GraphQL multipart uploads streamed into Cassandra chunks as they arrive.

Strawberry's aiohttp view reads every uploaded file whole into a ``BytesIO``
before the operation runs, so one 25 MB attachment costs 25 MB of gateway
memory. :class:`StreamingUploadAdapter` is the view's request adapter instead
(``gateway/app.py`` builds the view with it):
it reads the multipart body itself, keeps the small ``operations`` and ``map``
fields, and pipes each file part straight into ``attachment_chunks`` one
1000 KiB chunk at a time. Resolvers receive a :class:`StoredUpload` (what was
stored) or a :class:`RefusedUpload` (why nothing was) in place of the file.

Only signed-in callers get anything stored. Reading stops at the first file
that is refused (too large, too many files), so the rest of the body is never
read into the gateway. Stored uploads that no resolver claims (the operation
failed validation, or did not use them) are deleted when the request ends by
:func:`discard_unclaimed_uploads`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from aiohttp import web
from aiohttp.multipart import BodyPartReader
from cross_web import AiohttpHTTPRequestAdapter, FormData

from gateway.db.clock import new_timeuuid
from gateway.graph.context import bearer_token
from gateway.mail.attachments import MAX_ATTACHMENT_BYTES, AttachmentStore, TooLarge
from gateway.mail.names import content_type_of, decode_client_filename, sanitize_filename

log = logging.getLogger(__name__)

#: The most files one request may upload.
MAX_FILES = 20
#: The most bytes a non-file form field (``operations``, ``map``) may have.
MAX_FORM_FIELD = 1024 * 1024


@dataclass
class StoredUpload:
    """A file that was streamed into ``attachment_chunks``."""

    filename: str
    content_type: str
    size: int
    chunk_count: int
    attachment_id: UUID
    claimed: bool = False


@dataclass(frozen=True)
class RefusedUpload:
    """A file that was not stored, and why (the resolver reports it as bad input)."""

    filename: str
    reason: str


@dataclass(frozen=True)
class UploadSink:
    attachments: AttachmentStore
    authenticate: Callable[[str], Awaitable[str | None]]


UPLOAD_SINK = web.AppKey("mail_upload_sink", UploadSink)
STAGED_UPLOADS = web.RequestKey("mail_staged_uploads", list)


class StreamingUploadAdapter(AiohttpHTTPRequestAdapter):
    async def get_form_data(self) -> FormData:
        if self._form_data is not None:
            return self._form_data
        if not (self.content_type or "").startswith("multipart/form-data"):
            return await super().get_form_data()
        sink = self.request.app[UPLOAD_SINK]
        staged: list[StoredUpload] = []
        self.request[STAGED_UPLOADS] = staged
        form: dict[str, Any] = {}
        files: dict[str, Any] = {}
        refusal = None if await self._viewer(sink) else "Sign in to upload files."
        reader = await self.request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader) or not part.name:
                raise ValueError("every part needs a name; nested multipart is not supported")
            if part.filename is None:
                form[part.name] = await _read_text(part)
                continue
            filename = sanitize_filename(decode_client_filename(part.filename))
            if refusal is None and len(staged) >= MAX_FILES:
                refusal = f"At most {MAX_FILES} files per request."
            if refusal is not None:
                files[part.name] = RefusedUpload(filename, refusal)
                break
            attachment_id = new_timeuuid()
            try:
                size, chunk_count = await sink.attachments.write_stream(attachment_id, part.read_chunk)
            except TooLarge:
                refusal = f"`{filename}` is larger than {MAX_ATTACHMENT_BYTES // (1024 * 1024)} MB."
                files[part.name] = RefusedUpload(filename, refusal)
                break
            upload = StoredUpload(
                filename=filename,
                content_type=content_type_of(part.headers.get("Content-Type"), filename),
                size=size,
                chunk_count=chunk_count,
                attachment_id=attachment_id,
            )
            staged.append(upload)
            files[part.name] = upload
        if refusal is not None:
            for name in _mapped_names(form.get("map")):
                files.setdefault(name, RefusedUpload(name, refusal))
        self._form_data = FormData(files=files, form=form)
        return self._form_data

    async def _viewer(self, sink: UploadSink) -> str | None:
        token = bearer_token(self.request.headers.get("Authorization"))
        return await sink.authenticate(token) if token else None


async def _read_text(part: BodyPartReader) -> str:
    data = bytearray()
    while chunk := await part.read_chunk():
        data += chunk
        if len(data) > MAX_FORM_FIELD:
            raise ValueError(f"form field {part.name!r} is larger than {MAX_FORM_FIELD} bytes")
    return data.decode(part.get_charset(default="utf-8"))


def _mapped_names(raw: Any) -> list[str]:
    """The file field names of the multipart request's ``map`` (those never read too)."""
    try:
        mapping = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return []
    return [str(name) for name in mapping] if isinstance(mapping, dict) else []


@web.middleware
async def discard_unclaimed_uploads(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """After the request, delete every stored upload that no email took."""
    try:
        return await handler(request)
    finally:
        staged = request.get(STAGED_UPLOADS)
        unclaimed = [u for u in staged or () if not u.claimed]
        if unclaimed:
            attachments = request.app[UPLOAD_SINK].attachments
            results = await asyncio.shield(
                asyncio.gather(
                    *(attachments.delete(u.attachment_id, u.chunk_count) for u in unclaimed),
                    return_exceptions=True,
                )
            )
            for upload, result in zip(unclaimed, results, strict=True):
                if isinstance(result, BaseException):
                    log.warning("could not delete unclaimed upload %s: %s", upload.attachment_id, result)

