"""The client address behind a request: the socket's peer, or the right-most untrusted forwarded hop."""

from __future__ import annotations

import ipaddress
import re

import pytest

from gateway.http.client_address import address_key, client_address, parse_address
from gateway.settings.values import parse_networks

LOOPBACK = ("127.0.0.1",)
CHAIN = ("10.0.0.0/8", "192.168.1.5", "2001:db8:ffff::/48")


def address(peer: str | None, *forwarded: str, trusted: tuple[str, ...] = LOOPBACK) -> str | None:
    found = client_address(peer, forwarded, trusted)
    return None if found is None else str(found)


def test_without_trusted_proxies_the_peer_is_the_client_whatever_the_header_says() -> None:
    assert address("203.0.113.7", "198.51.100.1", trusted=()) == "203.0.113.7"


def test_an_untrusted_peer_cannot_forward() -> None:
    assert address("203.0.113.7", "198.51.100.1") == "203.0.113.7"


def test_a_trusted_peer_names_the_client() -> None:
    assert address("127.0.0.1", "198.51.100.1") == "198.51.100.1"


def test_spoofed_left_most_entries_are_ignored() -> None:
    # The client sent "X-Forwarded-For: 1.1.1.1, 2.2.2.2"; the proxy appended the real peer.
    assert address("127.0.0.1", "1.1.1.1, 2.2.2.2, 198.51.100.1") == "198.51.100.1"


def test_a_chain_of_trusted_proxies_is_skipped() -> None:
    forwarded = "1.1.1.1, 198.51.100.1, 10.1.2.3, 192.168.1.5"
    assert address("10.0.0.2", forwarded, trusted=CHAIN) == "198.51.100.1"


def test_several_headers_are_one_list_in_order() -> None:
    assert address("10.0.0.2", "1.1.1.1, 198.51.100.1", "10.1.2.3", trusted=CHAIN) == "198.51.100.1"


def test_when_every_hop_is_trusted_the_farthest_one_is_the_client() -> None:
    assert address("10.0.0.2", "10.9.9.9, 10.1.2.3", trusted=CHAIN) == "10.9.9.9"
    assert address("127.0.0.1") == "127.0.0.1"


def test_ipv6_peers_hops_and_networks() -> None:
    assert address("2001:db8:ffff::1", "2001:DB8:1::5", trusted=CHAIN) == "2001:db8:1::5"
    assert address("::1", "[2001:db8:1::5]:443", trusted=("::1",)) == "2001:db8:1::5"
    # An IPv4 client seen through a dual-stack socket is the IPv4 address.
    assert address("::ffff:127.0.0.1", "198.51.100.1") == "198.51.100.1"


def test_garbage_stops_the_walk_at_the_last_trusted_hop() -> None:
    assert address("127.0.0.1", "198.51.100.1, not-an-ip") == "127.0.0.1"
    assert address("10.0.0.2", "198.51.100.1, unknown, 10.1.2.3", trusted=CHAIN) == "10.1.2.3"
    assert address("127.0.0.1", " , ,") == "127.0.0.1"
    assert address("127.0.0.1", "300.1.1.1") == "127.0.0.1"


def test_ports_and_quotes_are_stripped() -> None:
    assert address("127.0.0.1", '"198.51.100.1:5555"') == "198.51.100.1"
    assert parse_address("[::1]") == ipaddress.ip_address("::1")
    assert parse_address("fe80::1%eth0") == ipaddress.ip_address("fe80::1")


def test_an_unknown_peer_is_none() -> None:
    assert address(None, "198.51.100.1") is None
    assert address("unix-socket", "198.51.100.1") is None


def test_ipv6_clients_share_a_key_per_64() -> None:
    one = ipaddress.ip_address("2001:db8:1:2::1")
    other = ipaddress.ip_address("2001:db8:1:2:ffff::9")
    elsewhere = ipaddress.ip_address("2001:db8:1:3::1")
    assert address_key(one) == address_key(other) == "2001:db8:1:2::/64"
    assert address_key(elsewhere) != address_key(one)
    assert address_key(ipaddress.ip_address("198.51.100.1")) == "198.51.100.1"
    assert address_key(None) == "unknown"


def test_trusted_proxy_entries_are_validated() -> None:
    assert [str(n) for n in parse_networks(["127.0.0.1", " 10.0.0.0/8", "::1"])] == [
        "127.0.0.1/32",
        "10.0.0.0/8",
        "::1/128",
    ]
    with pytest.raises(ValueError, match=re.escape("'10.0.0.0/33'")):
        parse_networks(["10.0.0.0/33"])
    with pytest.raises(ValueError, match=re.escape("'proxy.local'")):
        parse_networks(["proxy.local"])
