"""Delivering verification codes: a JSON POST to the operator's sender, or on the
embedded development node, the log.

The webhook (``GATEWAY_VERIFICATION_WEBHOOK_URL``) is the operator's SMS or
email gateway. Any 2xx answer is a delivery; a timeout, a refused connection or
another status is tried again, a bounded number of times with a short back-off,
and then the request fails with ``UNAVAILABLE`` naming the cause. Asking again
is safe: a new code replaces the undelivered one. Each POST carries the request's
W3C ``traceparent`` (``gateway/tracing.py``), so the sender's own spans join its trace.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

import aiohttp

from gateway.errors import Unavailable
from gateway.tracing import outgoing_headers

log = logging.getLogger(__name__)

BACKOFF_SECONDS = 0.2


class CodeSender:
    """POSTs codes to ``url``; without one, writes them to the log when ``log_codes`` (the
    embedded development node only: on a real cluster the log is read by more people than
    the code's owner, so a code is never written there and the request is refused)."""

    def __init__(self, url: str, *, timeout: float, attempts: int, log_codes: bool) -> None:
        self.url = url
        self.timeout = timeout
        self.attempts = attempts
        self.log_codes = log_codes

    async def send(self, network: str, network_id: str, code: str, expires_at: datetime) -> None:
        payload = {
            "network": network,
            "networkId": network_id,
            "code": code,
            "expiresAt": expires_at.isoformat().replace("+00:00", "Z"),
        }
        if not self.url and not self.log_codes:
            log.error("a verification code was asked for, but GATEWAY_VERIFICATION_WEBHOOK_URL is unset")
            raise Unavailable(
                "Verification codes cannot be delivered: no sender is configured "
                "(GATEWAY_VERIFICATION_WEBHOOK_URL).",
                retry_safe=True,
            )
        if not self.url:
            log.warning(
                "verification code for %s:%s is %s (valid until %s; set GATEWAY_VERIFICATION_WEBHOOK_URL "
                "to deliver codes)",
                network,
                network_id,
                code,
                payload["expiresAt"],
            )
            return
        problem = ""
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        headers = outgoing_headers()
        async with aiohttp.ClientSession(timeout=timeout, headers=headers) as http:
            for n in range(self.attempts):
                if n:
                    await asyncio.sleep(BACKOFF_SECONDS * 2 ** (n - 1))
                try:
                    async with http.post(self.url, json=payload) as response:
                        if 200 <= response.status < 300:
                            return
                        problem = f"the sender answered HTTP {response.status}"
                except TimeoutError:
                    problem = f"the sender did not answer within {self.timeout:g} s"
                except aiohttp.ClientError as exc:
                    problem = f"the sender could not be reached ({type(exc).__name__})"
                log.warning("verification webhook attempt %d/%d: %s", n + 1, self.attempts, problem)
        raise Unavailable(
            f"The verification code could not be delivered: {problem} after {self.attempts} attempts. "
            "Asking for a new code later is safe.",
            retry_safe=True,
        )
