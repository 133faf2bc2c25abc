"""The syntax of the settings whose values are more than a number or a word: rate
rules, proxy networks, CORS origins, time buckets, URLs, names and secrets. The
layers that use those values (rate limits, client addresses, CORS) read them from
here; the ``*_problem`` functions are the checks the declarations in
``gateway.settings`` name, each returning a one-line message naming the variable
(or None).

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
from pathlib import Path
from urllib.parse import quote, unquote

from strawberry.http.websocket_origin import normalize_allowed_origins

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
ANY_ORIGIN = "*"
#: Characters of GATEWAY_URL_SIGNING_SECRET at the least (e.g. ``openssl rand -hex 32`` gives 64).
MIN_SIGNING_SECRET = 32

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


def rate_problem(variable: str, text: str) -> str | None:
    try:
        parse_rate(variable, text)
    except ValueError as exc:
        return f"{variable}: {exc}"
    return None


def networks_problem(variable: str, entries: tuple[str, ...]) -> str | None:
    try:
        parse_networks(entries)
    except ValueError as exc:
        return f"{variable}: {exc}"
    return None


def origins_problem(variable: str, origins: tuple[str, ...]) -> str | None:
    try:
        normalized_origins(origins)
    except ValueError as exc:
        return f"{variable}: {exc}"
    return None


def bucket_problem(variable: str, text: str) -> str | None:
    """A time bucket: a calendar unit, or a number of seconds (``3600s``)."""
    if text in {"year", "month", "day"} or re.fullmatch(r"[1-9][0-9]*s", text):
        return None
    return f"{variable} must be 'year', 'month', 'day' or '<N>s', got {text!r}"


@dataclass(frozen=True)
class ClusterUrl:
    """``redis+cluster://[user:password@]host:port,host:port,...`` (``rediss+cluster://`` for
    TLS): the masters to discover a Redis Cluster from (any reachable one is enough)."""

    nodes: tuple[tuple[str, int], ...]
    tls: bool
    username: str | None
    password: str | None

    def node_url(self, host: str, port: int) -> str:
        """A standalone URL of one node, with this URL's scheme and credentials."""
        scheme = "rediss" if self.tls else "redis"
        credentials = ""
        if self.username is not None or self.password is not None:
            user = quote(self.username or "", safe="")
            credentials = f"{user}:{quote(self.password or '', safe='')}@"
        return f"{scheme}://{credentials}{host}:{port}/0"


_CLUSTER_URL = re.compile(r"(rediss?)\+cluster://(?:([^@/]*)@)?([^@/?#]+)/?(0)?")
_NODE = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})")


def cluster_url(text: str) -> ClusterUrl | None:
    """The cluster a ``redis+cluster://`` URL names; None for any other URL. Raises
    ``ValueError`` for a cluster URL that names no node or a malformed one."""
    prefix = re.match(r"rediss?\+cluster://", text)
    if prefix is None:
        return None
    if text[prefix.end() :] in ("", "/", "/0"):
        raise ValueError("it names no node")
    match = _CLUSTER_URL.fullmatch(text)
    if match is None:
        raise ValueError("a cluster URL has no path but /0, no query and no fragment")
    scheme, credentials, hosts = match.group(1), match.group(2), match.group(3)
    nodes = []
    for item in hosts.split(","):
        node = _NODE.fullmatch(item)
        if node is None or not 0 < int(node.group(2)) < 65536:
            raise ValueError(f"{item!r} is not host:port")
        nodes.append((node.group(1).strip("[]"), int(node.group(2))))
    username = password = None
    if credentials is not None:
        user, _, secret = credentials.partition(":")
        username, password = unquote(user) or None, unquote(secret) or None
    return ClusterUrl(tuple(nodes), scheme == "rediss", username, password)


def broker_url_problem(variable: str, text: str) -> str | None:
    try:
        if not text or cluster_url(text) is not None or re.fullmatch(r"(rediss?|unix)://\S+", text):
            return None
    except ValueError as exc:
        return f"{variable} must be redis+cluster://host:port,host:port,...: {exc}, got {text!r}"
    return f"{variable} must be redis://host:port/db or redis+cluster://host:port,host:port,..., got {text!r}"


_DATACENTER = re.compile(r"[A-Za-z0-9_.-]+")


def replication_datacenters(text: str) -> dict[str, int] | None:
    """The datacenters of a ``dc1:3,dc2:3`` replication and each one's replication factor, in
    order; None for ``SimpleStrategy:N``. ValueError for anything else."""
    text = text.strip()
    if re.fullmatch(r"SimpleStrategy(:[0-9]+)?", text):
        if int(text.partition(":")[2] or "1") < 1:
            raise ValueError("SimpleStrategy's replication factor must be 1 or more")
        return None
    found: dict[str, int] = {}
    for part in text.split(","):
        dc, colon, factor = part.strip().partition(":")
        if not colon or not _DATACENTER.fullmatch(dc) or not factor.isdigit():
            raise ValueError("expected 'SimpleStrategy:N' or 'dc1:3,dc2:3'")
        if dc in found:
            raise ValueError(f"datacenter {dc!r} is named twice")
        if int(factor) < 1:
            raise ValueError(f"datacenter {dc!r} needs 1 replica or more; leave out one that keeps none")
        found[dc] = int(factor)
    return found


def replication_problem(variable: str, text: str) -> str | None:
    """``SimpleStrategy:N``, or ``dc:rf`` pairs for NetworkTopologyStrategy."""
    try:
        replication_datacenters(text)
    except ValueError as exc:
        return f"{variable} must be 'SimpleStrategy:N' or 'dc1:3,dc2:3' ({exc}), got {text!r}"
    return None


def datacenter_problem(variable: str, text: str) -> str | None:
    """A datacenter's name as the snitch gives it (``dc1``, ``eu-west``)."""
    if _DATACENTER.fullmatch(text):
        return None
    return f"{variable} must be a datacenter's name (letters, digits, '_', '.', '-'), got {text!r}"


def keyspace_problem(variable: str, text: str) -> str | None:
    """Cassandra's own rule for unquoted keyspace names (48 characters at most)."""
    if re.fullmatch(r"[a-zA-Z][a-zA-Z0-9_]{0,47}", text):
        return None
    return f"{variable} is not a valid keyspace name: {text!r}"


def country_code_problem(variable: str, text: str) -> str | None:
    if re.fullmatch(r"\+?([0-9]{1,3})?", text):
        return None
    return f"{variable} must be 1-3 digits or empty"


def public_url_problem(variable: str, text: str) -> str | None:
    """An origin with an optional path prefix: links are made by appending to it."""
    if not text or re.fullmatch(r"https?://[^/?#\s]+(/[^?#\s]*)?", text):
        return None
    return f"{variable} must be an http(s) URL without query, got {text!r}"


#: Secrets printed in this repository (compose.yaml's demo value, the embedded node's default
#: pepper, the documentation's and the CI's placeholders): a real cluster refuses them whatever
#: their length, since anyone can read them.
PUBLISHED_SECRETS = frozenset(
    {
        "compose-demo-secret-replace-me-0123456789",
        "insecure-development-pepper",
        "config-check",
        "...",
        "changeme",
        "change-me",
        "secret",
    }
)


def cluster_secret_problem(variable: str, text: str) -> str | None:
    """A secret a real cluster's processes share: of our own, and long enough not to be guessed."""
    if text.strip() in PUBLISHED_SECRETS:
        return (
            f"{variable} is a value published with the gateway (compose.yaml, the docs or the development "
            "default): set a secret of your own on a real cluster (openssl rand -hex 32)"
        )
    if len(text) < MIN_SIGNING_SECRET:
        return (
            f"{variable} must be at least {MIN_SIGNING_SECRET} characters on a real cluster "
            "(openssl rand -hex 32 gives 64)"
        )
    return None


def signing_secret_problem(variable: str, text: str) -> str | None:
    """Short keys can be guessed; an empty one means a random key per process."""
    if text and len(text) < MIN_SIGNING_SECRET:
        return f"{variable} must be at least {MIN_SIGNING_SECRET} characters"
    return None


#: What ``OTEL_TRACES_EXPORTER`` may name: the exporters the gateway ships, or none.
TRACE_EXPORTERS = ("otlp", "console", "none")


def trace_exporters_problem(variable: str, names: tuple[str, ...]) -> str | None:
    """``otlp``, ``console`` or both; ``none`` only alone."""
    unknown = [name for name in names if name.lower() not in TRACE_EXPORTERS]
    if unknown:
        return f"{variable} may name otlp, console or none, got {unknown[0]!r}"
    if "none" in (name.lower() for name in names) and len(names) > 1:
        return f"{variable}: 'none' must be the only entry"
    return None


def http_url_problem(variable: str, text: str) -> str | None:
    if not text or re.fullmatch(r"https?://[^/?#\s]+(/[^\s]*)?", text):
        return None
    return f"{variable} must be an http(s) URL, got {text!r}"


def file_problem(variable: str, path: Path) -> str | None:
    return None if path.is_file() else f"{variable}: no such file {path}"


def heap_size_problem(variable: str, text: str) -> str | None:
    """A JVM heap size as ``-Xmx`` takes it."""
    if re.fullmatch(r"\d+[kKmMgG]?", text):
        return None
    return f"{variable} must be a heap size such as 1G or 512M, got {text!r}"
