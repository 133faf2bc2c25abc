"""GraphQL multipart uploads streamed into Cassandra chunks as they arrive.

Strawberry's aiohttp view reads every uploaded file whole into a ``BytesIO``
before the operation runs, so one 25 MB attachment costs 25 MB of gateway
memory. :class:`StreamingUploadAdapter` is the view's request adapter instead
(``gateway/server/app.py`` builds the view with it). It reads the multipart body in
the spec's order and refuses anything else with ``BAD_REQUEST``:

1. ``operations`` (at most ``GATEWAY_MAX_JSON_BYTES``) and ``map`` (64 KiB);
2. the operation is checked (:func:`gateway.http.multipart.upload_targets`):
   a valid mutation whose every mapped file lands on an ``Upload`` variable;
3. the caller is authenticated: an anonymous caller's files are never read,
   and the operation runs with each replaced by a :class:`RefusedUpload`
   (``sendEmail`` then answers ``UNAUTHENTICATED``);
4. the caller's upload limit (``GATEWAY_RATE_UPLOADS``) is taken, once per
   request: over it no file is read either (``RATE_LIMITED``);
5. only then each file part, which must be named in ``map``, is piped
   straight into ``attachment_chunks`` one 1000 KiB chunk at a time.

Every read waits at most ``GATEWAY_BODY_TIMEOUT_SECONDS`` for the client: a body
that stalls is answered 408 and its connection closed (:func:`gateway.http.requests.within`).

Resolvers receive a :class:`StoredUpload` (what was stored) or a
:class:`RefusedUpload` (why nothing was) in place of the file. Reading stops at
the first file that is refused (too large, too many files), so the rest of the
body is never read into the gateway. Stored uploads that no resolver claims
(the request was refused after a file, the operation failed, or did not use
them) are deleted when the request ends by :func:`discard_unclaimed_uploads`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from uuid import UUID

from aiohttp import web
from aiohttp.multipart import BodyPartReader, MultipartReader
from cross_web import FormData

from gateway.db.clock import new_timeuuid
from gateway.errors import GatewayError, RateLimited
from gateway.http.auth import bearer_token
from gateway.http.multipart import MAX_MAP_BYTES, SPEC_ORDER, parse_map, parse_operations, upload_targets
from gateway.http.requests import ENDPOINT, BoundedRequestAdapter, bad_request, too_large, within
from gateway.mail.attachment_store import MAX_ATTACHMENT_BYTES, AttachmentStore, TooLarge
from gateway.mail.names import content_type_of, decode_client_filename, sanitize_filename

log = logging.getLogger(__name__)

#: The most files one request may upload.
MAX_FILES = 20


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
    """A file that was not stored, and why: the resolver raises ``error``, or reports
    ``reason`` as bad input."""

    filename: str
    reason: str
    error: GatewayError | None = None


@dataclass(frozen=True)
class UploadSink:
    attachments: AttachmentStore
    authenticate: Callable[[str], Awaitable[str | None]]
    #: Takes one upload from the user's bucket (``Limit.UPLOAD``), or raises RateLimited.
    admit: Callable[[str], Awaitable[None]]


UPLOAD_SINK = web.AppKey("mail_upload_sink", UploadSink)
STAGED_UPLOADS = web.RequestKey("mail_staged_uploads", list)


class StreamingUploadAdapter(BoundedRequestAdapter):
    async def get_form_data(self) -> FormData:
        if self._form_data is not None:
            return self._form_data
        if not (self.content_type or "").startswith("multipart/form-data"):
            return await super().get_form_data()
        endpoint = self.request.app[ENDPOINT]
        sink = self.request.app[UPLOAD_SINK]
        staged: list[StoredUpload] = []
        self.request[STAGED_UPLOADS] = staged
        reader = await self.request.multipart()
        wait = endpoint.body_timeout
        operations = await _leading_field(reader, "operations", endpoint.max_json_bytes, wait)
        raw_map = await _leading_field(reader, "map", MAX_MAP_BYTES, wait)
        mapping = parse_map(raw_map)
        upload_targets(endpoint, parse_operations(operations), mapping)
        form = {"operations": operations, "map": raw_map}
        if mapping:
            refused = await self._refusal(sink, mapping)
            if refused is not None:
                self._form_data = FormData(files=refused, form=form)
                return self._form_data
        files = await _stream_files(reader, mapping, sink, staged, wait)
        self._form_data = FormData(files=files, form=form)
        return self._form_data

    async def _refusal(
        self, sink: UploadSink, mapping: dict[str, list[str]]
    ) -> dict[str, StoredUpload | RefusedUpload] | None:
        """Every file refused unread when the caller is anonymous or over the upload limit
        (taken here, once per request, before the first byte is stored); None to read them."""
        login = await self._viewer(sink)
        if login is None:
            return {name: RefusedUpload(name, "Sign in to upload files.") for name in mapping}
        try:
            await sink.admit(login)
        except RateLimited as exc:
            return {name: RefusedUpload(name, exc.message, exc) for name in mapping}
        return None

    async def _viewer(self, sink: UploadSink) -> str | None:
        token = bearer_token(self.request.headers.get("Authorization"))
        return await sink.authenticate(token) if token else None


async def _leading_field(reader: MultipartReader, name: str, limit: int, wait: float) -> str:
    part = await within(wait, reader.next())
    if not isinstance(part, BodyPartReader) or part.name != name or part.filename is not None:
        raise bad_request(SPEC_ORDER)
    data = bytearray()
    while chunk := await within(wait, part.read_chunk()):
        data += chunk
        if len(data) > limit:
            raise too_large(f"`{name}`", limit)
    try:
        return data.decode(part.get_charset(default="utf-8"))
    except (UnicodeDecodeError, LookupError) as exc:
        raise bad_request(f"`{name}` is not text in its declared charset.") from exc


async def _stream_files(
    reader: MultipartReader,
    mapping: dict[str, list[str]],
    sink: UploadSink,
    staged: list[StoredUpload],
    wait: float,
) -> dict[str, StoredUpload | RefusedUpload]:
    """Each file part the map names, stored; refused ones (and the rest) as :class:`RefusedUpload`.
    Every read waits at most ``wait`` seconds for the client."""
    files: dict[str, StoredUpload | RefusedUpload] = {}
    refusal: str | None = None
    while (part := await within(wait, reader.next())) is not None:
        if not isinstance(part, BodyPartReader) or part.name not in mapping or part.name in files:
            name = getattr(part, "name", None)
            raise bad_request(f"Part {name!r} is not a file the `map` names. {SPEC_ORDER}")
        filename = sanitize_filename(decode_client_filename(part.filename or ""))
        if len(staged) >= MAX_FILES:
            refusal = f"At most {MAX_FILES} files per request."
            files[part.name] = RefusedUpload(filename, refusal)
            break
        attachment_id = new_timeuuid()

        def read(size: int, part: BodyPartReader = part) -> Awaitable[bytes]:
            return within(wait, part.read_chunk(size))

        try:
            size, chunk_count = await sink.attachments.write_stream(attachment_id, read)
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
    missing = [name for name in mapping if name not in files]
    if refusal is not None:
        files.update((name, RefusedUpload(name, refusal)) for name in missing)
    elif missing:
        raise bad_request(f"The `map` names files the body does not contain: {', '.join(missing)}.")
    return files


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
