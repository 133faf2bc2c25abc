"""The bearer token of an ``Authorization`` header."""

from __future__ import annotations

import re

#: RFC 6750's ``b64token``, at most 512 characters: the gateway's tokens are 43 characters of
#: base64url, and anything that is no token (bytes that are not text, blanks, a megabyte of
#: something) never reaches a session lookup.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]{1,512}=*")


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value; "" for a malformed one,
    None when there is none."""
    if authorization is None or not authorization.strip():
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not _TOKEN.fullmatch(token):
        return ""
    return token
