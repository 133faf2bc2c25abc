"""Rate rules and their configuration syntax: ``<count>/<period>``, or ``off``.

A period is a unit (``s``, ``m``, ``h``, ``d``) with an optional multiplier:
``20/h`` is 20 at once and then one every 3 minutes, ``20/10m`` 20 per ten minutes.
The count is a token bucket's capacity (the burst), and the bucket refills at
count per period, so a client that stays under the rate is never refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_SYNTAX = re.compile(r"([1-9][0-9]*)\s*/\s*([1-9][0-9]*)?\s*([smhd])")


@dataclass(frozen=True)
class Rule:
    """A token bucket: ``capacity`` tokens, refilled at ``capacity`` per ``period`` seconds."""

    name: str
    capacity: int
    period: float

    @property
    def refill_per_second(self) -> float:
        return self.capacity / self.period


def parse_rate(name: str, text: str) -> Rule | None:
    """The rule ``text`` describes (None for ``off``); ValueError when it is not one."""
    text = text.strip().lower()
    if text == "off":
        return None
    match = _SYNTAX.fullmatch(text)
    if match is None:
        raise ValueError(f"expected '<count>/<period>' such as '20/h' or '5/10m', or 'off', got {text!r}")
    count, multiplier, unit = match.groups()
    return Rule(name, int(count), int(multiplier or 1) * UNITS[unit])
