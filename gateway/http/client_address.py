"""The address of the client behind a request, and the key rate limits use for it.

It is the socket's peer, unless that peer is a trusted proxy
(``GATEWAY_TRUSTED_PROXIES``): then ``X-Forwarded-For`` is read from the right,
skipping trusted proxies, and the first hop that is not one is the client.
Entries left of it were written by the client itself and are ignored, so a
spoofed ``X-Forwarded-For: 1.2.3.4`` changes nothing. An entry that is not an
address stops the walk at the last trusted hop: a proxy we trust writes
addresses, so garbage came from elsewhere and nothing left of it can be believed.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from gateway.settings.values import IPNetwork, parse_networks

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: IPv6 clients are limited per /64: one subscriber usually holds a whole /64.
IPV6_KEY_PREFIX = 64

_BRACKETED = re.compile(r"\[([0-9a-fA-F:.%]+)\](?::[0-9]{1,5})?")
_V4_WITH_PORT = re.compile(r"([0-9.]+):[0-9]{1,5}")


def parse_address(text: str) -> IPAddress | None:
    """An address as proxies write it (``1.2.3.4``, ``1.2.3.4:80``, ``2001:db8::1``,
    ``[2001:db8::1]:80``); IPv4-mapped IPv6 as IPv4; None for anything else."""
    text = text.strip().strip('"')
    if match := _BRACKETED.fullmatch(text):
        text = match.group(1)
    elif match := _V4_WITH_PORT.fullmatch(text):
        text = match.group(1)
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@lru_cache(maxsize=16)
def _networks(entries: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return parse_networks(entries)


def _trusted(address: IPAddress, networks: Sequence[IPNetwork]) -> bool:
    return any(address.version == n.version and address in n for n in networks)


def client_address(
    peer: str | None, forwarded_for: Iterable[str], trusted_proxies: tuple[str, ...]
) -> IPAddress | None:
    """The client's address; None only when the peer itself is unknown or not an address.

    ``forwarded_for`` are the ``X-Forwarded-For`` header values in the order received
    (several headers count as one list)."""
    address = parse_address(peer) if peer else None
    networks = _networks(trusted_proxies)
    if address is None or not networks or not _trusted(address, networks):
        return address
    hops = [hop for value in forwarded_for for hop in value.split(",") if hop.strip()]
    for hop in reversed(hops):
        parsed = parse_address(hop)
        if parsed is None:
            return address
        address = parsed
        if not _trusted(address, networks):
            return address
    return address


def address_key(address: IPAddress | None) -> str:
    """What a per-address limit counts under: the IPv4 address, or the IPv6 /64."""
    if address is None:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, IPV6_KEY_PREFIX), strict=False))
    return str(address)


def request_address_key(request: Any, trusted_proxies: Sequence[str]) -> str:
    """The key per-address limits use for an aiohttp request: its peer, or the client its
    trusted proxy names in ``X-Forwarded-For``."""
    peer = getattr(request, "remote", None)
    forwarded = request.headers.getall("X-Forwarded-For", []) if request is not None else []
    return address_key(client_address(peer, forwarded, tuple(trusted_proxies)))
