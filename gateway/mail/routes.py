"""``GET /attachments/{emailId}/{filename}`` (ranges, ETags, signed links), and the
streamed uploads of ``/graphql``."""

from __future__ import annotations

import contextlib
import logging
from uuid import UUID

from aiohttp import hdrs, web

from gateway.db.session import CassandraUnavailable, RequestMetrics, measuring
from gateway.graph.context import Services
from gateway.http.auth import bearer_token
from gateway.mail.attachment_store import AttachmentStore
from gateway.mail.links import DownloadLinks
from gateway.mail.names import content_disposition
from gateway.mail.ranges import ByteRange, Unsatisfiable, entity_tag, none_match, requested_range
from gateway.mail.records import AttachmentRecord
from gateway.mail.store import MailStore
from gateway.mail.uploads import UPLOAD_SINK, UploadSink, discard_unclaimed_uploads
from gateway.ratelimit.policy import Limit

log = logging.getLogger(__name__)

MAIL_SERVICES = web.AppKey("mail_services", Services)

#: Chunks read ahead of the one being sent: the next read overlaps the send.
PREFETCH_CHUNKS = 1


def install(app: web.Application, services: Services) -> None:
    """Add the download route, and the upload sink and clean-up that
    :class:`StreamingUploadAdapter` (the ``/graphql`` view's request adapter) relies on."""
    app[MAIL_SERVICES] = services
    app[UPLOAD_SINK] = UploadSink(
        services.store(AttachmentStore),
        services.authenticate,
        lambda login: services.rate_limits.check(Limit.UPLOAD, login),
    )
    services.store(DownloadLinks)  # made now, so a missing signing secret is reported at start
    app.middlewares.append(discard_unclaimed_uploads)
    app.router.add_get("/attachments/{email_id}/{filename}", download)


def _not_found() -> web.HTTPNotFound:
    return web.HTTPNotFound(text="No such attachment.", content_type="text/plain")


def _unavailable() -> web.HTTPServiceUnavailable:
    return web.HTTPServiceUnavailable(text="Cassandra is unavailable right now.")


async def _reader(request: web.Request, services: Services, email_id: UUID, filename: str) -> str:
    """Who is downloading: the viewer a signed link names, else the bearer token's user.

    A link with a bad or expired signature is 403 whatever else the request carries,
    and is refused before any CQL runs.
    """
    query = request.query
    if "sig" in query:
        links = services.store(DownloadLinks)
        viewer = query.get("u", "")
        if not links.check(email_id, filename, viewer, query.get("exp", ""), query["sig"]):
            raise web.HTTPForbidden(
                text="This download link is invalid or has expired; ask the API for a fresh one.",
                content_type="text/plain",
            )
        return viewer
    token = bearer_token(request.headers.get(hdrs.AUTHORIZATION))
    try:
        login = await services.authenticate(token) if token else None
    except CassandraUnavailable as exc:
        raise _unavailable() from exc
    if login is None:
        raise web.HTTPUnauthorized(
            text="Sign in to download attachments.",
            content_type="text/plain",
            headers={"WWW-Authenticate": 'Bearer realm="gateway"'},
        )
    return login


async def download(request: web.Request) -> web.StreamResponse:
    """Stream one attachment, or the one byte range asked for, to a participant of its email.

    401 without a valid bearer token or signed link (403 for a bad link); 404 for
    anyone who is not the sender or a recipient, exactly as for an id or name that
    does not exist, so probing reveals nothing. Only the chunks that hold the
    requested bytes are read, the next one while the current one is written to the
    socket. See ``gateway/mail/ranges.py`` for the conditional and range rules.
    """
    services = request.app[MAIL_SERVICES]
    try:
        email_id = UUID(request.match_info["email_id"])
    except ValueError:
        raise _not_found() from None
    filename = request.match_info["filename"]
    with measuring(RequestMetrics()) as metrics:
        reader = await _reader(request, services, email_id, filename)
        if email_id.version != 1:
            raise _not_found()
        try:
            email = await services.store(MailStore).email(email_id)
        except CassandraUnavailable as exc:
            raise _unavailable() from exc
        if email is None or not email.is_participant(reader):
            raise _not_found()
        attachment = email.attachment(filename)
        if attachment is None:
            raise _not_found()
        return await _send(request, services, attachment, metrics)


def _served(attachment: AttachmentRecord, metrics: RequestMetrics) -> None:
    """One debug line per answered download with what it cost in CQL round trips: a streamed
    response has no GraphQL ``extensions`` to carry the count."""
    log.debug(
        "download of %s: %d CQL statements",
        attachment.attachment_id,
        metrics.statements,
        extra={"cql_statements": metrics.statements},
    )


async def _send(
    request: web.Request, services: Services, attachment: AttachmentRecord, metrics: RequestMetrics
) -> web.StreamResponse:
    size = attachment.size
    etag = entity_tag(attachment.attachment_id, size)
    headers = {
        "ETag": etag,
        hdrs.ACCEPT_RANGES: "bytes",
        hdrs.CACHE_CONTROL: "private, max-age=3600, immutable",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "default-src 'none'; sandbox",
        "Referrer-Policy": "no-referrer",
    }
    if none_match(request.headers.get(hdrs.IF_NONE_MATCH), etag):
        _served(attachment, metrics)
        return web.Response(status=304, headers=headers)
    try:
        wanted = requested_range(
            request.headers.get(hdrs.RANGE), request.headers.get(hdrs.IF_RANGE), etag, size
        )
    except Unsatisfiable:
        raise web.HTTPRequestRangeNotSatisfiable(
            headers={**headers, hdrs.CONTENT_RANGE: f"bytes */{size}"}
        ) from None
    headers[hdrs.CONTENT_TYPE] = attachment.content_type
    headers[hdrs.CONTENT_DISPOSITION] = content_disposition(attachment.filename, attachment.content_type)
    response = web.StreamResponse(headers=headers)
    if wanted is None:
        wanted = ByteRange(0, size)
    else:
        response.set_status(206)
        response.headers[hdrs.CONTENT_RANGE] = wanted.content_range(size)
    response.content_length = wanted.length
    if request.method == "HEAD":
        _served(attachment, metrics)
        await response.prepare(request)
        return response
    await response.prepare(request)
    pieces = services.store(AttachmentStore).read_range(
        attachment.attachment_id, wanted.start, wanted.stop, ahead=PREFETCH_CHUNKS
    )
    sent = 0
    async with contextlib.aclosing(pieces):
        try:
            async for data in pieces:
                await response.write(data)
                sent += len(data)
        except (CassandraUnavailable, LookupError) as exc:
            # The status line is gone already; closing short of Content-Length tells the client.
            log.error("download of %s broke after %d bytes: %s", attachment.attachment_id, sent, exc)
            if request.transport is not None:
                request.transport.close()
            return response
    _served(attachment, metrics)
    await response.write_eof()
    return response
