"""HTTP conditional and range requests for attachment downloads (RFC 9110 §13, §14).

Stored attachments never change: a file is written once under a fresh
attachment id when its email is sent, and no operation rewrites it. An id and a
size therefore name one exact byte sequence, which makes ``"<id>-<size>"`` a
strong validator that is correct for ranges and ``If-Range``.

One range per request: ``bytes=0-99``, ``bytes=100-`` and ``bytes=-500``
answer 206 with that slice. A request for several ranges gets the whole file
with 200, as RFC 9110 §14.2 allows: download managers and media players ask
for one range at a time, and ``multipart/byteranges`` would buy nothing for
them. A header that does not parse is ignored the same way; a single range that
starts past the end answers 416.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from uuid import UUID

_RANGE_SPEC = re.compile(r"^(?:(\d+)-(\d*)|-(\d+))$")


def entity_tag(attachment_id: UUID, size: int) -> str:
    return f'"{attachment_id.hex}-{size}"'


def _tags(header: str) -> list[str]:
    return [t.strip() for t in header.split(",") if t.strip()]


def none_match(header: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` holds the current tag: weak comparison, as §13.1.2 asks."""
    if header is None:
        return False
    return any(tag == "*" or tag.removeprefix("W/") == etag for tag in _tags(header))


class Unsatisfiable(Exception):
    """The range lies entirely past the end of the file: 416."""


@dataclass(frozen=True)
class ByteRange:
    start: int
    stop: int  # exclusive

    @property
    def length(self) -> int:
        return self.stop - self.start

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.stop - 1}/{size}"


def requested_range(range_header: str | None, if_range: str | None, etag: str, size: int) -> ByteRange | None:
    """The one range to send, or None for the whole file; raises :class:`Unsatisfiable`.

    ``If-Range`` must carry the current strong tag for the range to apply; a date
    or another tag means the client's copy is not ours, so it gets the whole file.
    """
    if range_header is None:
        return None
    if if_range is not None and if_range.strip() != etag:
        return None
    unit, _, specs = range_header.partition("=")
    if unit.strip().lower() != "bytes":
        return None
    parts = _tags(specs)
    if len(parts) != 1:
        return None
    match = _RANGE_SPEC.match(parts[0])
    if match is None:
        return None
    first, last, suffix = match.groups()
    if suffix is not None:
        if int(suffix) == 0 or size == 0:
            raise Unsatisfiable
        return ByteRange(max(size - int(suffix), 0), size)
    start = int(first)
    if last and int(last) < start:
        return None
    if start >= size:
        raise Unsatisfiable
    stop = size if not last else min(int(last) + 1, size)
    return ByteRange(start, stop)
