"""JSON for HTTP bodies through ``orjson``, with the standard library wherever the two differ.

``orjson`` reads and writes several times faster than ``json``, which showed as a
visible share of every response's CPU (``bench/NOTES.md``). It reads integers past 64 bits as floats
and refuses ``NaN`` and lone surrogates that ``json.loads`` accepts: a body with a
long digit run, or one ``orjson`` refuses, is read by ``json.loads``, so every
request value and every parse error is what it was (GraphQL reports an oversized
``Int`` as out of range, not as a float). Writing, a value ``orjson`` cannot
encode (an integer past 64 bits) goes through ``json.dumps``. Otherwise output differs from
``json.dumps`` only in form: non-ASCII characters are written as UTF-8, not
``\\u`` escapes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

#: A run of digits long enough to be an integer past 64 bits.
_LONG_NUMBER = re.compile(rb"[0-9]{19}")


def loads(data: str | bytes) -> Any:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if _LONG_NUMBER.search(raw) is None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


def dumps(value: object) -> bytes:
    """Compact UTF-8 JSON."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()
