"""What a fuzzed answer may not be: the problems found in one."""

from __future__ import annotations

from typing import Any


def problems_of(status: int, body: Any) -> list[str]:
    if status >= 500:
        return [f"HTTP {status}"]
    if not isinstance(body, dict):
        return [f"HTTP {status}, body is not a JSON object"]
    found = []
    for error in body.get("errors") or []:
        code = (error.get("extensions") or {}).get("code")
        if code is None:
            found.append(f"error without a code: {error.get('message')!r}")
        elif code == "INTERNAL_SERVER_ERROR":
            found.append(f"INTERNAL_SERVER_ERROR: {error}")
    return found
