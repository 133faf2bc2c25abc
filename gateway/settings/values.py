"""The syntax of the settings whose values are more than a number or a word: rate
rules, proxy networks and CORS origins. The layers that use those values (rate
limits, client addresses, CORS) read them from here.

Rates: ``<count>/<period>``, or ``off``. A period is a unit (``s``, ``m``, ``h``,
``d``) with an optional multiplier: ``20/h`` is 20 at once and then one every 3
minutes, ``20/10m`` 20 per ten minutes. The count is a token bucket's capacity (the
burst), and the bucket refills at count per period, so a client that stays under the
rate is never refused.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from strawberry.http.websocket_origin import normalize_allowed_origins

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
ANY_ORIGIN = "*"

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


def parse_networks(entries: Iterable[str]) -> tuple[IPNetwork, ...]:
    """``GATEWAY_TRUSTED_PROXIES`` entries (IPs or CIDRs); ValueError naming a bad one."""
    networks: list[IPNetwork] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(f"not an IP address or CIDR: {entry.strip()!r}") from None
    return tuple(networks)


def normalized_origins(origins: Iterable[str]) -> frozenset[str]:
    """``https://Example.com:443`` becomes ``https://example.com``; raises ``ValueError`` on a non-origin."""
    return normalize_allowed_origins(tuple(origins))


def cors_problems(origins: tuple[str, ...]) -> list[str]:
    if ANY_ORIGIN in origins and len(origins) > 1:
        return ["GATEWAY_CORS_ORIGINS: '*' (any origin) must be the only entry"]
    try:
        normalized_origins(origins)
    except ValueError as exc:
        return [f"GATEWAY_CORS_ORIGINS: {exc}"]
    return []
