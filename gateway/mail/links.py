"""Signed download links: attachment URLs that work without the bearer token.

An ``<img>``, a ``<video>``, an ``<a download>`` or an OS download manager
cannot send an ``Authorization`` header, so ``Attachment.url`` carries its own
proof: ``?u=<viewer>&exp=<unix seconds>&sig=<HMAC-SHA256>`` over the email id,
the file name, the viewer and the expiry. A link is a bearer credential for one
file until it expires: signing out does not revoke it, which is why it lives
minutes (``GATEWAY_DOWNLOAD_URL_TTL_SECONDS``), not as long as a session.

The key comes from ``GATEWAY_URL_SIGNING_SECRET``, which every gateway behind
one load balancer must share (a link minted by one process is fetched from
another). A real cluster (``CASSANDRA_CONTACT_POINTS``) refuses to start
without it; the embedded development node signs with a random key per process
and warns, so links then die with the process.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, urlencode
from uuid import UUID

from gateway.mail.names import download_path
from gateway.settings import Settings

log = logging.getLogger(__name__)

#: Expiries are rounded up to a multiple of TTL / QUANTA, so a client that asks
#: again soon gets the same URL back and its HTTP cache still hits.
QUANTA = 15


@dataclass(frozen=True)
class SignedLink:
    url: str
    expires_at: datetime


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class DownloadLinks:
    """Mints and checks signed links; one per process (``Services.store(DownloadLinks)``)."""

    def __init__(self, _db: object, settings: Settings) -> None:
        secret = settings.url_signing_secret.encode()
        if not secret:
            log.warning(
                "GATEWAY_URL_SIGNING_SECRET is unset: download links are signed with a random key of "
                "this process and stop working when it restarts or on any other gateway process"
            )
            secret = secrets.token_bytes(32)
        # A key of its own, so the secret could sign other things without confusion.
        self._key = hmac.new(secret, b"gateway attachment download link v1", hashlib.sha256).digest()
        self.ttl = settings.download_url_ttl_seconds
        self.public_url = settings.public_url.rstrip("/")

    def _signature(self, email_id: UUID, filename: str, viewer: str, expires: int) -> str:
        message = "\0".join((str(email_id), filename, viewer, str(expires))).encode()
        return _b64(hmac.new(self._key, message, hashlib.sha256).digest())

    def expiry(self, now: float | None = None) -> int:
        """Unix seconds at least the TTL ahead, rounded up to a multiple of TTL / QUANTA."""
        step = max(1, self.ttl // QUANTA)
        earliest = int(now if now is not None else time.time()) + self.ttl
        return -(-earliest // step) * step

    def mint(self, email_id: UUID, filename: str, viewer: str, *, now: float | None = None) -> SignedLink:
        """The URL of a file for ``viewer``: absolute under ``GATEWAY_PUBLIC_URL``, else a path
        on the API's own origin. Never built from the request's ``Host``: a client (or whoever
        stands between it and us) chooses that header, and a link made from it would send the
        credential it carries to their host."""
        expires = self.expiry(now)
        query = urlencode(
            {"u": viewer, "exp": expires, "sig": self._signature(email_id, filename, viewer, expires)},
            quote_via=quote,
        )
        return SignedLink(
            url=f"{self.public_url}{download_path(str(email_id), filename)}?{query}",
            expires_at=datetime.fromtimestamp(expires, UTC),
        )

    def check(
        self,
        email_id: UUID,
        filename: str,
        viewer: str,
        expires: str,
        signature: str,
        *,
        now: float | None = None,
    ) -> bool:
        """Whether the link's signature is ours and it has not expired."""
        if not expires.isdigit() or len(expires) > 12:
            return False
        if int(expires) <= (now if now is not None else time.time()):
            return False
        expected = self._signature(email_id, filename, viewer, int(expires))
        return hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace"))
