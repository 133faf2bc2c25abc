"""Attachment file names and content types: what a client sent, made safe to store and serve."""

from __future__ import annotations

import mimetypes
import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import quote, unquote

MAX_FILENAME = 255
FALLBACK_FILENAME = "attachment"
OCTET_STREAM = "application/octet-stream"

_CONTENT_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}")


_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def decode_client_filename(raw: str) -> str:
    """The name as the user saw it. Browsers send UTF-8 as is; aiohttp and some other
    clients percent-encode ``filename=`` (``R%C3%A9sum%C3%A9.pdf``), so an ASCII
    value with valid escapes is decoded (a literal ``%41`` in a name is lost that way)."""
    if raw.isascii() and _PERCENT_ESCAPE.search(raw):
        try:
            return unquote(raw, errors="strict")
        except UnicodeDecodeError:
            return raw
    return raw


def sanitize_filename(raw: str | None) -> str:
    """The last path segment, without control characters or surrounding dots and
    spaces, at most 255 characters (keeping the extension); never empty."""
    name = unicodedata.normalize("NFC", raw or "")
    name = re.split(r"[/\\]", name)[-1]
    name = "".join(c for c in name if unicodedata.category(c)[0] != "C")
    name = name.strip().strip(".").strip()
    if not name:
        return FALLBACK_FILENAME
    if len(name) > MAX_FILENAME:
        stem, dot, ext = name.rpartition(".")
        if dot and 0 < len(ext) <= 16:
            name = stem[: MAX_FILENAME - len(ext) - 1] + "." + ext
        else:
            name = name[:MAX_FILENAME]
    return name


def unique_filenames(names: Iterable[str]) -> list[str]:
    """Downloads address attachments by name, so names within one email are made
    distinct: ``report.pdf``, ``report (2).pdf``, ..."""
    taken: set[str] = set()
    result = []
    for name in names:
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            stem, dot, ext = name.rpartition(".")
            candidate = f"{stem} ({n}).{ext}" if dot and stem else f"{name} ({n})"
        taken.add(candidate)
        result.append(candidate)
    return result


def content_type_of(declared: str | None, filename: str) -> str:
    """The declared media type when it is well-formed and specific, else a guess from the name."""
    value = (declared or "").split(";")[0].strip().lower()
    if value and value != OCTET_STREAM and _CONTENT_TYPE.fullmatch(value):
        return value
    guessed, _ = mimetypes.guess_type(filename, strict=False)
    return guessed or OCTET_STREAM


#: Shown in the browser rather than saved: raster images only. Never SVG (it runs
#: scripts) nor HTML; the download's sandbox CSP and ``nosniff`` stay on regardless.
INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def content_disposition(filename: str, content_type: str = OCTET_STREAM) -> str:
    """``inline`` for the safe image types, else ``attachment``; with an ASCII fallback
    name and the exact name in RFC 5987 form."""
    disposition = "inline" if content_type in INLINE_TYPES else "attachment"
    ascii_name = unicodedata.normalize("NFKD", filename).encode("ascii", "ignore").decode()
    ascii_name = re.sub(r'["\\\x00-\x1f\x7f;]', "_", ascii_name).strip() or FALLBACK_FILENAME
    return f"{disposition}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"


def download_path(email_id: str, filename: str) -> str:
    return f"/attachments/{email_id}/{quote(filename, safe='')}"
