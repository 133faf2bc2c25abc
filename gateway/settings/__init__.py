"""All configuration, read from the environment in one place.

Every variable is listed, with its default, in the README's configuration table.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from gateway.settings.values import cors_problems, parse_networks, parse_rate

#: Characters of GATEWAY_URL_SIGNING_SECRET at the least (e.g. ``openssl rand -hex 32`` gives 64).
MIN_SIGNING_SECRET = 32


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
    # "json" (one object a line) or "text"; empty: text on a terminal, JSON otherwise.
    log_format: str = ""
    # aiohttp's line per HTTP request (off: GraphQL operations have their own access line).
    http_access_log: bool = False
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
    # Where the served gateway's Cassandra sockets are read and written: "loop" (its event
    # loop) or "thread" (the driver's own I/O thread, libev).
    cassandra_io: str = "loop"
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
    # Fractions are allowed (0.5 is twelve hours); at least one second.
    session_ttl_days: float = 30
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
    # Largest GraphQL response body (bytes, before compression); a larger one is replaced by a
    # QUERY_TOO_COMPLEX error. The cost limit keeps responses well below it; this is the backstop.
    max_response_bytes: int = 16 * 1024 * 1024
    # WebSockets: open sockets per process and per signed-in user (refused with close code
    # 4429), seconds between keep-alives (legacy graphql-ws "ka" messages, and pings), and
    # seconds a socket may wait before its connection_init (then closed with 4408).
    max_sockets: int = 10000
    max_sockets_per_user: int = 20
    ws_keep_alive_seconds: float = 15
    ws_init_timeout_seconds: float = 10
    # Largest JSON request body (read whole); multipart uploads stream and have their own limits.
    max_json_bytes: int = 1024 * 1024
    # Adds extensions.cql (statements, lwtRetries) to every GraphQL response (tests and benchmarks).
    query_metrics: bool = False
    # Time buckets of growing partitions (see the domain stores for the arithmetic).
    messenger_bucket: str = "month"
    # Seconds of one slot of the talk-partner recency index (see gateway/messenger/activity.py).
    messenger_activity_slot: int = 60
    room_bucket: str = "day"
    blog_post_bucket: str = "month"
    blog_author_bucket: str = "year"
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
    # The background fan-out of a linked identity to its uploaders (gateway/contacts/fanout.py):
    # seconds between looks for orphaned jobs, uploaders per page, seconds a worker's lease lasts.
    contacts_fanout_poll_seconds: float = 5.0
    contacts_fanout_batch: int = 200
    contacts_fanout_lease_seconds: float = 30.0
    # How long an address-book upload's lease lasts unless its heartbeat renews it.
    contacts_upload_lease_seconds: int = 120
    # Identity verification: where codes are POSTed (unset: the server log), how long a
    # code lives, wrong codes before it is burnt, the webhook's per-attempt timeout and
    # attempts (code requests per user: GATEWAY_RATE_VERIFICATION_REQUESTS).
    verification_webhook_url: str = ""
    verification_code_ttl_seconds: int = 600
    verification_max_wrong_codes: int = 5
    verification_webhook_timeout: float = 5.0
    verification_webhook_attempts: int = 3
    # Mail folder partitions: "month", "day" or "<N>s" (never change it once mail is stored).
    mail_bucket: str = "month"
    # Attachment download links (gateway/mail/links.py): the origin they start with ("" = the
    # request's own), the HMAC secret every process shares ("" = random per process, embedded
    # node only) and how long a link works.
    public_url: str = ""
    url_signing_secret: str = ""
    download_url_ttl_seconds: int = 900
    # Seed demo data on `gateway serve --seed`.
    seed: bool = False
    # Proxies (IPs or CIDRs) whose X-Forwarded-For names the client (gateway/http/client_address.py).
    trusted_proxies: tuple[str, ...] = ()
    # Rate limits, '<count>/<period>' or 'off' (gateway/ratelimit/): per client address ...
    rate_sign_in: str = "30/m"
    rate_sign_up: str = "20/h"
    rate_comments: str = "20/10m"
    # ... and per user.
    rate_sends: str = "120/m"
    rate_uploads: str = "60/h"
    rate_verification_requests: str = "5/h"
    rate_wrong_codes: str = "10/h"
    rate_identity_lookups: str = "1000/d"
    # signIn back-off per login: free failures, then base seconds doubling up to the ceiling.
    sign_in_free_failures: int = 5
    sign_in_backoff: float = 1.0
    sign_in_backoff_max: float = 900.0
    # Password hashing: its own threads (0: one per core) and how many may wait for one.
    password_threads: int = 0
    password_queue: int = 32

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

    def rate_variables(self) -> dict[str, str]:
        """Each rate limit's environment variable and value."""
        return {
            "GATEWAY_RATE_SIGN_IN": self.rate_sign_in,
            "GATEWAY_RATE_SIGN_UP": self.rate_sign_up,
            "GATEWAY_RATE_COMMENTS": self.rate_comments,
            "GATEWAY_RATE_SENDS": self.rate_sends,
            "GATEWAY_RATE_UPLOADS": self.rate_uploads,
            "GATEWAY_RATE_VERIFICATION_REQUESTS": self.rate_verification_requests,
            "GATEWAY_RATE_WRONG_CODES": self.rate_wrong_codes,
            "GATEWAY_RATE_IDENTITY_LOOKUPS": self.rate_identity_lookups,
        }

    @classmethod
    def from_env(cls) -> Settings:
        points = tuple(p.strip() for p in _env("CASSANDRA_CONTACT_POINTS", "").split(",") if p.strip())
        return cls(
            host=_env("GATEWAY_HOST", cls.host),
            port=_env_int("GATEWAY_PORT", cls.port),
            log_level=_env("GATEWAY_LOG_LEVEL", cls.log_level).upper(),
            log_format=_env("GATEWAY_LOG_FORMAT", cls.log_format).lower(),
            http_access_log=_env_bool("GATEWAY_HTTP_ACCESS_LOG", cls.http_access_log),
            cors_origins=tuple(o.strip() for o in _env("GATEWAY_CORS_ORIGINS", "").split(",") if o.strip()),
            trusted_documents=Path(trusted) if (trusted := _env("GATEWAY_TRUSTED_DOCUMENTS", "")) else None,
            introspection=_env_optional_bool("GATEWAY_INTROSPECTION"),
            contact_points=points,
            cassandra_port=_env_int("CASSANDRA_PORT", cls.cassandra_port),
            keyspace=_env("CASSANDRA_KEYSPACE", cls.keyspace),
            username=os.environ.get("CASSANDRA_USERNAME") or None,
            password=os.environ.get("CASSANDRA_PASSWORD") or None,
            local_dc=os.environ.get("CASSANDRA_LOCAL_DC") or None,
            replication=_env("CASSANDRA_REPLICATION", cls.replication if not points else "datacenter1:3"),
            request_timeout=_env_float("CASSANDRA_REQUEST_TIMEOUT", cls.request_timeout),
            connect_timeout=_env_float("CASSANDRA_CONNECT_TIMEOUT", cls.connect_timeout),
            consistency=_env("CASSANDRA_CONSISTENCY", cls.consistency).upper(),
            serial_consistency=_env("CASSANDRA_SERIAL_CONSISTENCY", cls.serial_consistency).upper(),
            cassandra_io=_env("CASSANDRA_IO", cls.cassandra_io).lower(),
            cassandra_home=Path(_env("GATEWAY_CASSANDRA_HOME", str(_default_cassandra_home()))),
            cassandra_heap=_env("GATEWAY_CASSANDRA_HEAP", cls.cassandra_heap),
            cassandra_ring_heap=_env("GATEWAY_CASSANDRA_RING_HEAP", cls.cassandra_ring_heap),
            redis_port=_env_int("GATEWAY_REDIS_PORT", cls.redis_port),
            broker_url=_env("GATEWAY_BROKER_URL", cls.broker_url),
            drain_seconds=_env_float("GATEWAY_DRAIN_SECONDS", cls.drain_seconds),
            session_ttl_days=_env_float("SESSION_TTL_DAYS", cls.session_ttl_days),
            argon2_time_cost=_env_int("ARGON2_TIME_COST", cls.argon2_time_cost),
            argon2_memory_cost_kib=_env_int("ARGON2_MEMORY_COST_KIB", cls.argon2_memory_cost_kib),
            argon2_parallelism=_env_int("ARGON2_PARALLELISM", cls.argon2_parallelism),
            max_depth=_env_int("GATEWAY_MAX_DEPTH", cls.max_depth),
            max_aliases=_env_int("GATEWAY_MAX_ALIASES", cls.max_aliases),
            max_tokens=_env_int("GATEWAY_MAX_TOKENS", cls.max_tokens),
            max_fragments=_env_int("GATEWAY_MAX_FRAGMENTS", cls.max_fragments),
            max_cost=_env_int("GATEWAY_MAX_COST", cls.max_cost),
            max_batch=_env_int("GATEWAY_MAX_BATCH", cls.max_batch),
            max_response_bytes=_env_int("GATEWAY_MAX_RESPONSE_BYTES", cls.max_response_bytes),
            max_sockets=_env_int("GATEWAY_MAX_SOCKETS", cls.max_sockets),
            max_sockets_per_user=_env_int("GATEWAY_MAX_SOCKETS_PER_USER", cls.max_sockets_per_user),
            ws_keep_alive_seconds=_env_float("GATEWAY_WS_KEEP_ALIVE_SECONDS", cls.ws_keep_alive_seconds),
            ws_init_timeout_seconds=_env_float(
                "GATEWAY_WS_INIT_TIMEOUT_SECONDS", cls.ws_init_timeout_seconds
            ),
            max_json_bytes=_env_int("GATEWAY_MAX_JSON_BYTES", cls.max_json_bytes),
            query_metrics=_env_bool("GATEWAY_QUERY_METRICS", cls.query_metrics),
            messenger_bucket=_env("MESSENGER_BUCKET", cls.messenger_bucket),
            messenger_activity_slot=_env_int("MESSENGER_ACTIVITY_SLOT", cls.messenger_activity_slot),
            room_bucket=_env("ROOM_BUCKET", cls.room_bucket),
            blog_post_bucket=_env("BLOG_POST_BUCKET", cls.blog_post_bucket),
            blog_author_bucket=_env("BLOG_AUTHOR_BUCKET", cls.blog_author_bucket),
            blog_comment_bucket=_env("BLOG_COMMENT_BUCKET", cls.blog_comment_bucket),
            contacts_identity_pepper=_env("CONTACTS_IDENTITY_PEPPER", cls.contacts_identity_pepper),
            contacts_default_country_code=_env(
                "CONTACTS_DEFAULT_COUNTRY_CODE", cls.contacts_default_country_code
            ),
            contacts_max_in_flight=_env_int("CONTACTS_MAX_IN_FLIGHT", cls.contacts_max_in_flight),
            contacts_fanout_poll_seconds=_env_float(
                "CONTACTS_FANOUT_POLL_SECONDS", cls.contacts_fanout_poll_seconds
            ),
            contacts_fanout_batch=_env_int("CONTACTS_FANOUT_BATCH", cls.contacts_fanout_batch),
            contacts_fanout_lease_seconds=_env_float(
                "CONTACTS_FANOUT_LEASE_SECONDS", cls.contacts_fanout_lease_seconds
            ),
            contacts_upload_lease_seconds=_env_int(
                "CONTACTS_UPLOAD_LEASE_SECONDS", cls.contacts_upload_lease_seconds
            ),
            verification_webhook_url=_env("GATEWAY_VERIFICATION_WEBHOOK_URL", ""),
            verification_code_ttl_seconds=_env_int(
                "VERIFICATION_CODE_TTL_SECONDS", cls.verification_code_ttl_seconds
            ),
            verification_max_wrong_codes=_env_int(
                "VERIFICATION_MAX_WRONG_CODES", cls.verification_max_wrong_codes
            ),
            verification_webhook_timeout=_env_float(
                "VERIFICATION_WEBHOOK_TIMEOUT", cls.verification_webhook_timeout
            ),
            verification_webhook_attempts=_env_int(
                "VERIFICATION_WEBHOOK_ATTEMPTS", cls.verification_webhook_attempts
            ),
            mail_bucket=_env("MAIL_BUCKET", cls.mail_bucket),
            room_max_participants=_env_int("ROOM_MAX_PARTICIPANTS", cls.room_max_participants),
            rooms_per_user_max=_env_int("ROOMS_PER_USER_MAX", cls.rooms_per_user_max),
            public_url=_env("GATEWAY_PUBLIC_URL", cls.public_url),
            url_signing_secret=_env("GATEWAY_URL_SIGNING_SECRET", cls.url_signing_secret),
            download_url_ttl_seconds=_env_int(
                "GATEWAY_DOWNLOAD_URL_TTL_SECONDS", cls.download_url_ttl_seconds
            ),
            seed=_env_bool("GATEWAY_SEED", cls.seed),
            trusted_proxies=tuple(
                p.strip() for p in _env("GATEWAY_TRUSTED_PROXIES", "").split(",") if p.strip()
            ),
            rate_sign_in=_env("GATEWAY_RATE_SIGN_IN", cls.rate_sign_in),
            rate_sign_up=_env("GATEWAY_RATE_SIGN_UP", cls.rate_sign_up),
            rate_comments=_env("GATEWAY_RATE_COMMENTS", cls.rate_comments),
            rate_sends=_env("GATEWAY_RATE_SENDS", cls.rate_sends),
            rate_uploads=_env("GATEWAY_RATE_UPLOADS", cls.rate_uploads),
            rate_verification_requests=_env(
                "GATEWAY_RATE_VERIFICATION_REQUESTS", cls.rate_verification_requests
            ),
            rate_wrong_codes=_env("GATEWAY_RATE_WRONG_CODES", cls.rate_wrong_codes),
            rate_identity_lookups=_env("GATEWAY_RATE_IDENTITY_LOOKUPS", cls.rate_identity_lookups),
            sign_in_free_failures=_env_int("GATEWAY_SIGN_IN_FREE_FAILURES", cls.sign_in_free_failures),
            sign_in_backoff=_env_float("GATEWAY_SIGN_IN_BACKOFF", cls.sign_in_backoff),
            sign_in_backoff_max=_env_float("GATEWAY_SIGN_IN_BACKOFF_MAX", cls.sign_in_backoff_max),
            password_threads=_env_int("GATEWAY_PASSWORD_THREADS", cls.password_threads),
            password_queue=_env_int("GATEWAY_PASSWORD_QUEUE", cls.password_queue),
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
            "GATEWAY_MAX_RESPONSE_BYTES": self.max_response_bytes,
            "GATEWAY_MAX_SOCKETS": self.max_sockets,
            "GATEWAY_MAX_SOCKETS_PER_USER": self.max_sockets_per_user,
            "GATEWAY_WS_KEEP_ALIVE_SECONDS": self.ws_keep_alive_seconds,
            "GATEWAY_WS_INIT_TIMEOUT_SECONDS": self.ws_init_timeout_seconds,
            "GATEWAY_MAX_JSON_BYTES": self.max_json_bytes,
            "CASSANDRA_REQUEST_TIMEOUT": self.request_timeout,
            "CASSANDRA_CONNECT_TIMEOUT": self.connect_timeout,
            "CONTACTS_MAX_IN_FLIGHT": self.contacts_max_in_flight,
            "CONTACTS_FANOUT_POLL_SECONDS": self.contacts_fanout_poll_seconds,
            "CONTACTS_FANOUT_BATCH": self.contacts_fanout_batch,
            "CONTACTS_FANOUT_LEASE_SECONDS": self.contacts_fanout_lease_seconds,
            "VERIFICATION_CODE_TTL_SECONDS": self.verification_code_ttl_seconds,
            "VERIFICATION_MAX_WRONG_CODES": self.verification_max_wrong_codes,
            "VERIFICATION_WEBHOOK_TIMEOUT": self.verification_webhook_timeout,
            "VERIFICATION_WEBHOOK_ATTEMPTS": self.verification_webhook_attempts,
            "MESSENGER_ACTIVITY_SLOT": self.messenger_activity_slot,
            "ROOM_MAX_PARTICIPANTS": self.room_max_participants,
            "ROOMS_PER_USER_MAX": self.rooms_per_user_max,
            "GATEWAY_SIGN_IN_BACKOFF": self.sign_in_backoff,
            "GATEWAY_SIGN_IN_BACKOFF_MAX": self.sign_in_backoff_max,
            "GATEWAY_DOWNLOAD_URL_TTL_SECONDS": self.download_url_ttl_seconds,
        }
        problems += [(name, f"{name} must be positive, got {v}") for name, v in positive.items() if v <= 0]
        if 0 < self.session_ttl_days * 86400 < 1:
            message = f"SESSION_TTL_DAYS must be at least one second, got {self.session_ttl_days}"
            problems.append(("SESSION_TTL_DAYS", message))
        if self.contacts_upload_lease_seconds < 2:
            name = "CONTACTS_UPLOAD_LEASE_SECONDS"
            problems.append((name, f"{name} must be at least 2, got {self.contacts_upload_lease_seconds}"))
        buckets = {
            "MESSENGER_BUCKET": self.messenger_bucket,
            "ROOM_BUCKET": self.room_bucket,
            "BLOG_POST_BUCKET": self.blog_post_bucket,
            "BLOG_AUTHOR_BUCKET": self.blog_author_bucket,
            "BLOG_COMMENT_BUCKET": self.blog_comment_bucket,
            "MAIL_BUCKET": self.mail_bucket,
        }
        for name, value in buckets.items():
            if value not in {"year", "month", "day"} and not re.fullmatch(r"[1-9][0-9]*s", value):
                problems.append((name, f"{name} must be 'year', 'month', 'day' or '<N>s', got {value!r}"))
        if self.log_format not in {"", "json", "text"}:
            name = "GATEWAY_LOG_FORMAT"
            problems.append((name, f"{name} must be 'json' or 'text', got {self.log_format!r}"))
        if self.consistency not in CONSISTENCY_LEVELS:
            name = "CASSANDRA_CONSISTENCY"
            levels = ", ".join(CONSISTENCY_LEVELS)
            problems.append((name, f"{name} must be one of {levels}, got {self.consistency!r}"))
        if self.serial_consistency not in SERIAL_CONSISTENCY_LEVELS:
            name = "CASSANDRA_SERIAL_CONSISTENCY"
            problems.append((name, f"{name} must be LOCAL_SERIAL or SERIAL, got {self.serial_consistency!r}"))
        if self.cassandra_io not in {"loop", "thread"}:
            name = "CASSANDRA_IO"
            problems.append((name, f"{name} must be 'loop' or 'thread', got {self.cassandra_io!r}"))
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
            problems.append(
                (
                    "CASSANDRA_REPLICATION",
                    f"CASSANDRA_REPLICATION must be 'SimpleStrategy:N' or 'dc1:3,dc2:3', got {replication!r}",
                )
            )
        if not re.fullmatch(r"[a-zA-Z][a-zA-Z0-9_]{0,47}", self.keyspace):
            problems.append(
                ("CASSANDRA_KEYSPACE", f"CASSANDRA_KEYSPACE is not a valid keyspace name: {self.keyspace!r}")
            )
        problems += self._download_link_problems()
        problems += [("GATEWAY_CORS_ORIGINS", message) for message in cors_problems(self.cors_origins)]
        if self.trusted_documents is not None and not self.trusted_documents.is_file():
            name = "GATEWAY_TRUSTED_DOCUMENTS"
            problems.append((name, f"{name}: no such file {self.trusted_documents}"))
        not_negative = {
            "GATEWAY_SIGN_IN_FREE_FAILURES": self.sign_in_free_failures,
            "GATEWAY_PASSWORD_THREADS": self.password_threads,
            "GATEWAY_PASSWORD_QUEUE": self.password_queue,
        }
        problems += [(n, f"{n} must be 0 or more, got {v}") for n, v in not_negative.items() if v < 0]
        for name, value in self.rate_variables().items():
            try:
                parse_rate(name, value)
            except ValueError as exc:
                problems.append((name, f"{name}: {exc}"))
        try:
            parse_networks(self.trusted_proxies)
        except ValueError as exc:
            problems.append(("GATEWAY_TRUSTED_PROXIES", f"GATEWAY_TRUSTED_PROXIES: {exc}"))
        if not self.embedded and self.contacts_identity_pepper == Settings.contacts_identity_pepper:
            name = "CONTACTS_IDENTITY_PEPPER"
            problems.append(
                (
                    name,
                    f"{name} must be set to a secret of your own on a real cluster (CASSANDRA_CONTACT_POINTS "
                    "is set): with the public default, identity hashes are reversed by trying every number",
                )
            )
        if problems:
            raise SettingsError(problems[0][0], "; ".join(message for _, message in problems))
        return self

    def _download_link_problems(self) -> list[tuple[str, str]]:
        problems = []
        if self.public_url and not re.fullmatch(r"https?://[^/?#\s]+(/[^?#\s]*)?", self.public_url):
            name = "GATEWAY_PUBLIC_URL"
            problems.append((name, f"{name} must be an http(s) URL without query, got {self.public_url!r}"))
        name = "GATEWAY_URL_SIGNING_SECRET"
        if self.url_signing_secret and len(self.url_signing_secret) < MIN_SIGNING_SECRET:
            problems.append((name, f"{name} must be at least {MIN_SIGNING_SECRET} characters"))
        elif not self.url_signing_secret and not self.embedded:
            problems.append((name, f"{name} must be set with CASSANDRA_CONTACT_POINTS (gateways share it)"))
        return problems
