"""All configuration, read from the environment in one place.

Every variable is listed, with its default, in the README's configuration table.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from gateway.http.origins import cors_problems


def _env(name: str, default: str) -> str:
    value = os.environ.get(name)
    return default if value is None or value.strip() == "" else value.strip()


class SettingsError(ValueError):
    """A configuration variable has a value the gateway cannot use.

    Library code raises it; the command line turns it into a one-line message and exit code 2.
    """

    def __init__(self, variable: str, message: str) -> None:
        super().__init__(message)
        self.variable = variable
        self.message = message


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _env_int(name: str, default: int) -> int:
    raw = _env(name, str(default))
    try:
        return int(raw)
    except ValueError:
        raise SettingsError(name, f"{name} must be an integer, got {raw!r}") from None


def _env_float(name: str, default: float) -> float:
    raw = _env(name, str(default))
    try:
        return float(raw)
    except ValueError:
        raise SettingsError(name, f"{name} must be a number, got {raw!r}") from None


def _env_bool(name: str, default: bool) -> bool:
    raw = _env(name, "1" if default else "0").lower()
    if raw not in _TRUE | _FALSE:
        raise SettingsError(name, f"{name} must be 1/0, true/false, yes/no or on/off, got {raw!r}")
    return raw in _TRUE


def _env_optional_bool(name: str) -> bool | None:
    return _env_bool(name, False) if _env(name, "") else None


#: Consistency levels a statement may be sent at (the names of the driver's ``ConsistencyLevel``);
#: SERIAL and LOCAL_SERIAL only apply to the Paxos phase of a lightweight transaction.
CONSISTENCY_LEVELS = (
    "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE", "ANY",
)  # fmt: skip
SERIAL_CONSISTENCY_LEVELS = ("LOCAL_SERIAL", "SERIAL")


def _default_cassandra_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cassandra-gateway"


@dataclass(frozen=True)
class Settings:
    # HTTP service
    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "INFO"
    # Origins whose pages may call the API (CORS) and open its WebSocket; "*" is any
    # origin, without credentials. Empty: same-origin only.
    cors_origins: tuple[str, ...] = ()
    # A manifest of trusted documents (JSON, sha256 -> document): only those run.
    trusted_documents: Path | None = None
    # Whether introspection queries run: unset (None) means on, except with trusted
    # documents (see ``introspection_allowed``).
    introspection: bool | None = None
    # Cassandra connection. No contact points means: start and use the embedded node.
    contact_points: tuple[str, ...] = ()
    cassandra_port: int = 9042
    keyspace: str = "gateway"
    username: str | None = None
    password: str | None = None
    local_dc: str | None = None
    # "SimpleStrategy:1" or "dc1:3,dc2:3" (NetworkTopologyStrategy).
    replication: str = "SimpleStrategy:1"
    request_timeout: float = 5.0
    connect_timeout: float = 5.0
    # Consistency of every statement, and of the Paxos phase of lightweight transactions.
    consistency: str = "LOCAL_QUORUM"
    serial_consistency: str = "LOCAL_SERIAL"
    # Embedded node
    cassandra_home: Path = field(default_factory=_default_cassandra_home)
    cassandra_heap: str = "1G"
    # Heap of each node of the local ring (``gateway cassandra start --nodes 3``).
    cassandra_ring_heap: str = "320M"
    # Local Redis server (``gateway redis start``), with its files under cassandra_home.
    redis_port: int = 6390
    # Broker shared by gateway processes ("redis://host:port/db"); empty: one process, in-memory fan-out.
    broker_url: str = ""
    # Seconds a SIGTERM waits for in-flight requests before the process exits.
    drain_seconds: float = 10.0
    # Sessions and passwords
    session_ttl_days: int = 30
    argon2_time_cost: int = 3
    argon2_memory_cost_kib: int = 65536
    argon2_parallelism: int = 4
    # Query limits
    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 2000
    max_fragments: int = 100
    # Static cost of a request (a batch shares it; formula in gateway/graph/cost.py): the
    # execution-time budget of 5000 list items with ten fields each.
    max_cost: int = 50000
    max_batch: int = 10
    # Adds extensions.cql (statements, lwtRetries) to every GraphQL response (tests and benchmarks).
    query_metrics: bool = False
    # Time buckets of growing partitions (see the domain stores for the arithmetic).
    messenger_bucket: str = "month"
    # Seconds of one slot of the talk-partner recency index (see gateway/messenger/activity.py).
    messenger_activity_slot: int = 60
    room_bucket: str = "day"
    blog_post_bucket: str = "month"
    blog_comment_bucket: str = "day"
    # Contacts: the secret key of the identity hashes (HMAC-SHA256), the country
    # calling code for national phone numbers ("" = international numbers only),
    # and the most Cassandra requests contact uploads keep in flight per process.
    contacts_identity_pepper: str = "insecure-development-pepper"
    contacts_default_country_code: str = ""
    contacts_max_in_flight: int = 64
    # Rooms: the most participants a room may have, and the most rooms a user may be in.
    room_max_participants: int = 1000
    rooms_per_user_max: int = 200
    # Mail folder partitions: "month", "day" or "<N>s" (never change it once mail is stored).
    mail_bucket: str = "month"
    # Seed demo data on `gateway serve --seed`.
    seed: bool = False

    @property
    def embedded(self) -> bool:
        return not self.contact_points

    @property
    def introspection_allowed(self) -> bool:
        """``GATEWAY_INTROSPECTION`` when set; else on, unless trusted documents lock the
        gateway to known operations (then GraphiQL and tools must be let in explicitly)."""
        if self.introspection is not None:
            return self.introspection
        return self.trusted_documents is None

    @classmethod
    def from_env(cls) -> Settings:
        points = tuple(p.strip() for p in _env("CASSANDRA_CONTACT_POINTS", "").split(",") if p.strip())
        return cls(
            host=_env("GATEWAY_HOST", cls.host),
            port=_env_int("GATEWAY_PORT", cls.port),
            log_level=_env("GATEWAY_LOG_LEVEL", cls.log_level).upper(),
            cors_origins=tuple(o.strip() for o in _env("GATEWAY_CORS_ORIGINS", "").split(",") if o.strip()),
            trusted_documents=Path(trusted) if (trusted := _env("GATEWAY_TRUSTED_DOCUMENTS", "")) else None,
            introspection=_env_optional_bool("GATEWAY_INTROSPECTION"),
            contact_points=points,
            cassandra_port=_env_int("CASSANDRA_PORT", cls.cassandra_port),
            keyspace=_env("CASSANDRA_KEYSPACE", cls.keyspace),
            username=os.environ.get("CASSANDRA_USERNAME") or None,
            password=os.environ.get("CASSANDRA_PASSWORD") or None,
            local_dc=os.environ.get("CASSANDRA_LOCAL_DC") or None,
            replication=_env(
                "CASSANDRA_REPLICATION", cls.replication if not points else "datacenter1:3"
            ),
            request_timeout=_env_float("CASSANDRA_REQUEST_TIMEOUT", cls.request_timeout),
            connect_timeout=_env_float("CASSANDRA_CONNECT_TIMEOUT", cls.connect_timeout),
            consistency=_env("CASSANDRA_CONSISTENCY", cls.consistency).upper(),
            serial_consistency=_env("CASSANDRA_SERIAL_CONSISTENCY", cls.serial_consistency).upper(),
            cassandra_home=Path(_env("GATEWAY_CASSANDRA_HOME", str(_default_cassandra_home()))),
            cassandra_heap=_env("GATEWAY_CASSANDRA_HEAP", cls.cassandra_heap),
            cassandra_ring_heap=_env("GATEWAY_CASSANDRA_RING_HEAP", cls.cassandra_ring_heap),
            redis_port=_env_int("GATEWAY_REDIS_PORT", cls.redis_port),
            broker_url=_env("GATEWAY_BROKER_URL", cls.broker_url),
            drain_seconds=_env_float("GATEWAY_DRAIN_SECONDS", cls.drain_seconds),
            session_ttl_days=_env_int("SESSION_TTL_DAYS", cls.session_ttl_days),
            argon2_time_cost=_env_int("ARGON2_TIME_COST", cls.argon2_time_cost),
            argon2_memory_cost_kib=_env_int("ARGON2_MEMORY_COST_KIB", cls.argon2_memory_cost_kib),
            argon2_parallelism=_env_int("ARGON2_PARALLELISM", cls.argon2_parallelism),
            max_depth=_env_int("GATEWAY_MAX_DEPTH", cls.max_depth),
            max_aliases=_env_int("GATEWAY_MAX_ALIASES", cls.max_aliases),
            max_tokens=_env_int("GATEWAY_MAX_TOKENS", cls.max_tokens),
            max_fragments=_env_int("GATEWAY_MAX_FRAGMENTS", cls.max_fragments),
            max_cost=_env_int("GATEWAY_MAX_COST", cls.max_cost),
            max_batch=_env_int("GATEWAY_MAX_BATCH", cls.max_batch),
            query_metrics=_env_bool("GATEWAY_QUERY_METRICS", cls.query_metrics),
            messenger_bucket=_env("MESSENGER_BUCKET", cls.messenger_bucket),
            messenger_activity_slot=_env_int("MESSENGER_ACTIVITY_SLOT", cls.messenger_activity_slot),
            room_bucket=_env("ROOM_BUCKET", cls.room_bucket),
            blog_post_bucket=_env("BLOG_POST_BUCKET", cls.blog_post_bucket),
            blog_comment_bucket=_env("BLOG_COMMENT_BUCKET", cls.blog_comment_bucket),
            contacts_identity_pepper=_env("CONTACTS_IDENTITY_PEPPER", cls.contacts_identity_pepper),
            contacts_default_country_code=_env(
                "CONTACTS_DEFAULT_COUNTRY_CODE", cls.contacts_default_country_code
            ),
            contacts_max_in_flight=_env_int("CONTACTS_MAX_IN_FLIGHT", cls.contacts_max_in_flight),
            mail_bucket=_env("MAIL_BUCKET", cls.mail_bucket),
            room_max_participants=_env_int("ROOM_MAX_PARTICIPANTS", cls.room_max_participants),
            rooms_per_user_max=_env_int("ROOMS_PER_USER_MAX", cls.rooms_per_user_max),
            seed=_env_bool("GATEWAY_SEED", cls.seed),
        )

    def validate(self) -> Settings:
        """Fail at start-up, naming the variable, rather than on the first request."""
        problems: list[tuple[str, str]] = []
        ports = (
            ("GATEWAY_PORT", self.port),
            ("CASSANDRA_PORT", self.cassandra_port),
            ("GATEWAY_REDIS_PORT", self.redis_port),
        )
        for name, port in ports:
            if not 0 <= port <= 65535:
                problems.append((name, f"{name} must be a port number, got {port}"))
        positive = {
            "SESSION_TTL_DAYS": self.session_ttl_days,
            "ARGON2_TIME_COST": self.argon2_time_cost,
            "ARGON2_MEMORY_COST_KIB": self.argon2_memory_cost_kib,
            "ARGON2_PARALLELISM": self.argon2_parallelism,
            "GATEWAY_MAX_DEPTH": self.max_depth,
            "GATEWAY_MAX_ALIASES": self.max_aliases,
            "GATEWAY_MAX_TOKENS": self.max_tokens,
            "GATEWAY_MAX_FRAGMENTS": self.max_fragments,
            "GATEWAY_MAX_COST": self.max_cost,
            "GATEWAY_MAX_BATCH": self.max_batch,
            "CASSANDRA_REQUEST_TIMEOUT": self.request_timeout,
            "CASSANDRA_CONNECT_TIMEOUT": self.connect_timeout,
            "CONTACTS_MAX_IN_FLIGHT": self.contacts_max_in_flight,
            "MESSENGER_ACTIVITY_SLOT": self.messenger_activity_slot,
            "ROOM_MAX_PARTICIPANTS": self.room_max_participants,
            "ROOMS_PER_USER_MAX": self.rooms_per_user_max,
        }
        problems += [(name, f"{name} must be positive, got {v}") for name, v in positive.items() if v <= 0]
        buckets = {
            "MESSENGER_BUCKET": self.messenger_bucket,
            "ROOM_BUCKET": self.room_bucket,
            "BLOG_POST_BUCKET": self.blog_post_bucket,
            "BLOG_COMMENT_BUCKET": self.blog_comment_bucket,
            "MAIL_BUCKET": self.mail_bucket,
        }
        for name, value in buckets.items():
            if value not in {"month", "day"} and not re.fullmatch(r"[1-9][0-9]*s", value):
                problems.append((name, f"{name} must be 'month', 'day' or '<N>s', got {value!r}"))
        if self.consistency not in CONSISTENCY_LEVELS:
            name = "CASSANDRA_CONSISTENCY"
            levels = ", ".join(CONSISTENCY_LEVELS)
            problems.append((name, f"{name} must be one of {levels}, got {self.consistency!r}"))
        if self.serial_consistency not in SERIAL_CONSISTENCY_LEVELS:
            name = "CASSANDRA_SERIAL_CONSISTENCY"
            problems.append((name, f"{name} must be LOCAL_SERIAL or SERIAL, got {self.serial_consistency!r}"))
        if self.drain_seconds < 0:
            name = "GATEWAY_DRAIN_SECONDS"
            problems.append((name, f"{name} must be 0 or more, got {self.drain_seconds}"))
        if self.broker_url and not re.fullmatch(r"(rediss?|unix)://\S+", self.broker_url):
            name = "GATEWAY_BROKER_URL"
            problems.append((name, f"{name} must be redis://host:port/db, got {self.broker_url!r}"))
        if not re.fullmatch(r"\+?([0-9]{1,3})?", self.contacts_default_country_code):
            name = "CONTACTS_DEFAULT_COUNTRY_CODE"
            problems.append((name, f"{name} must be 1-3 digits or empty"))
        replication = self.replication.strip()
        simple = re.fullmatch(r"SimpleStrategy(:[1-9][0-9]*)?", replication)
        topology = re.fullmatch(r"[A-Za-z0-9_.-]+:[0-9]+(,\s*[A-Za-z0-9_.-]+:[0-9]+)*", replication)
        if not (simple or topology):
            problems.append((
                "CASSANDRA_REPLICATION",
                f"CASSANDRA_REPLICATION must be 'SimpleStrategy:N' or 'dc1:3,dc2:3', got {replication!r}",
            ))
        if not re.fullmatch(r"[a-zA-Z][a-zA-Z0-9_]{0,47}", self.keyspace):
            problems.append(
                ("CASSANDRA_KEYSPACE", f"CASSANDRA_KEYSPACE is not a valid keyspace name: {self.keyspace!r}")
            )
        problems += [("GATEWAY_CORS_ORIGINS", message) for message in cors_problems(self.cors_origins)]
        if self.trusted_documents is not None and not self.trusted_documents.is_file():
            name = "GATEWAY_TRUSTED_DOCUMENTS"
            problems.append((name, f"{name}: no such file {self.trusted_documents}"))
        if problems:
            raise SettingsError(problems[0][0], "; ".join(message for _, message in problems))
        return self

