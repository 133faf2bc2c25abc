"""``GET /attachments/{emailId}/{filename}`` and the streamed uploads of ``/graphql``."""

from __future__ import annotations

import contextlib
import logging
from uuid import UUID

from aiohttp import web

from gateway.db.session import CassandraUnavailable
from gateway.graph.context import Services, bearer_token
from gateway.mail.attachments import AttachmentStore
from gateway.mail.names import content_disposition
from gateway.mail.store import MailStore
from gateway.mail.uploads import UPLOAD_SINK, UploadSink, discard_unclaimed_uploads

log = logging.getLogger(__name__)

MAIL_SERVICES = web.AppKey("mail_services", Services)

#: Chunks read ahead of the one being sent: the next read overlaps the send.
PREFETCH_CHUNKS = 1


def install(app: web.Application, services: Services) -> None:
    """Add the download route, and the upload sink and clean-up that
    :class:`StreamingUploadAdapter` (the ``/graphql`` view's request adapter) relies on."""
    app[MAIL_SERVICES] = services
    app[UPLOAD_SINK] = UploadSink(services.store(AttachmentStore), services.authenticate)
    app.middlewares.append(discard_unclaimed_uploads)
    app.router.add_get("/attachments/{email_id}/{filename}", download)


def _not_found() -> web.HTTPNotFound:
    return web.HTTPNotFound(text="No such attachment.", content_type="text/plain")


async def download(request: web.Request) -> web.StreamResponse:
    """Stream one attachment to a participant of its email.

    401 without a valid bearer token; 404 for anyone who is not the sender or a
    recipient, exactly as for an id or name that does not exist, so probing
    reveals nothing. Chunks are sent as they are read, the next one being read
    while the current one is written to the socket.
    """
    services = request.app[MAIL_SERVICES]
    token = bearer_token(request.headers.get("Authorization"))
    try:
        login = await services.authenticate(token) if token else None
    except CassandraUnavailable as exc:
        raise web.HTTPServiceUnavailable(text="Cassandra is unavailable right now.") from exc
    if login is None:
        raise web.HTTPUnauthorized(
            text="Sign in to download attachments.",
            content_type="text/plain",
            headers={"WWW-Authenticate": 'Bearer realm="gateway"'},
        )
    try:
        email_id = UUID(request.match_info["email_id"])
    except ValueError:
        raise _not_found() from None
    if email_id.version != 1:
        raise _not_found()
    try:
        email = await services.store(MailStore).email(email_id)
    except CassandraUnavailable as exc:
        raise web.HTTPServiceUnavailable(text="Cassandra is unavailable right now.") from exc
    if email is None or not email.is_participant(login):
        raise _not_found()
    attachment = email.attachment(request.match_info["filename"])
    if attachment is None:
        raise _not_found()

    response = web.StreamResponse(
        headers={
            "Content-Type": attachment.content_type,
            "Content-Disposition": content_disposition(attachment.filename),
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "private, max-age=3600, immutable",
        }
    )
    response.content_length = attachment.size
    await response.prepare(request)
    if request.method == "HEAD":
        return response
    chunks = services.store(AttachmentStore).chunks(
        attachment.attachment_id, attachment.chunk_count, ahead=PREFETCH_CHUNKS
    )
    sent = 0
    async with contextlib.aclosing(chunks):
        try:
            async for parts in chunks:
                for data in parts:
                    await response.write(data)
                    sent += len(data)
        except (CassandraUnavailable, LookupError) as exc:
            # The status line is gone already; closing short of Content-Length tells the client.
            log.error("download of %s/%s broke after %d bytes: %s", email_id, attachment.filename, sent, exc)
            if request.transport is not None:
                request.transport.close()
            return response
    await response.write_eof()
    return response
