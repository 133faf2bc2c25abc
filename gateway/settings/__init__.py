"""All configuration of the running gateway, each setting declared once.

A field of :class:`Settings` is a setting: its ``setting(...)`` default names the environment
variable, the default, the bounds (``POSITIVE``, ``PORT``, ...), allowed values or a syntax
check from ``gateway.settings.values``, its old names, and a one-line description. One
generic reader (:meth:`Settings.from_env`), one generic validator (:meth:`Settings.validate`)
and the configuration reference (``docs/configuration.md``, written by
``gateway settings --markdown``) all come from those declarations (``declare.py``). The
rules that span several settings are the short list in :meth:`Settings._rules`.

Dataclass field metadata rather than pydantic-settings: it adds no dependency, keeps
``Settings`` a frozen dataclass that code and tests copy with ``dataclasses.replace()``,
and costs nothing at import.

Prefixes: ``GATEWAY_`` for the gateway's own settings, ``CASSANDRA_`` for its connection to
the cluster (contact points, port, keyspace, credentials, local datacenter, replication,
timeouts, consistency, I/O), and OpenTelemetry's standard ``OTEL_`` names for tracing.
Variables named otherwise before (``SESSION_TTL_DAYS``, ``ARGON2_*``, ``CONTACTS_*``,
``*_BUCKET``, ...) are read as aliases of their new names: the new name wins when both are
set, and ``gateway`` logs one deprecation warning per alias at start. Booleans take 1/0,
true/false, yes/no or on/off.

The local node and Redis that the development tooling starts are configured apart, in
``gateway.settings.tooling``: the running gateway never reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gateway.settings.declare import (
    NOT_NEGATIVE,
    PORT,
    POSITIVE,
    Bounds,
    SettingsError,
    at_least,
    declared,
    problems,
    raise_problems,
    read_env,
    setting,
    values_of,
)
from gateway.settings.values import (
    ANY_ORIGIN,
    broker_url_problem,
    bucket_problem,
    cluster_secret_problem,
    country_code_problem,
    datacenter_problem,
    file_problem,
    http_url_problem,
    keyspace_problem,
    networks_problem,
    origins_problem,
    public_url_problem,
    rate_problem,
    replication_datacenters,
    replication_problem,
    signing_secret_problem,
    trace_exporters_problem,
)

__all__ = ["CONSISTENCY_LEVELS", "SERIAL_CONSISTENCY_LEVELS", "Settings", "SettingsError"]

#: Consistency levels a statement may be sent at (the names of the driver's ``ConsistencyLevel``);
#: SERIAL and LOCAL_SERIAL only apply to the Paxos phase of a lightweight transaction.
CONSISTENCY_LEVELS = (
    "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE", "ANY",
)  # fmt: skip
SERIAL_CONSISTENCY_LEVELS = ("LOCAL_SERIAL", "SERIAL")
#: Replication when contact points are given and CASSANDRA_REPLICATION is not: survives a node loss.
CLUSTER_REPLICATION = "datacenter1:3"

HTTP = "HTTP service"
PROCESSES = "Processes and broker"
CASSANDRA = "Cassandra"
LIMITS = "Request limits"
SOCKETS = "WebSockets"
SESSIONS = "Sessions and passwords"
RATES = "Rate limits"
MESSENGER = "Messenger and rooms"
BLOG = "Blog"
MAIL = "Mail and download links"
CONTACTS = "Contacts and identity verification"
TRACING = "Tracing (OpenTelemetry)"

#: The longest ``GATEWAY_PUBLIC_MAX_AGE``: a year, the most RFC 9111 advises.
ONE_YEAR = 365 * 24 * 3600

_BUCKET = "(`year`, `month`, `day` or `<N>s`; never change it once data is stored)"


@dataclass(frozen=True)
class Settings:
    host: str = setting("GATEWAY_HOST", "127.0.0.1", "listen address", group=HTTP)
    port: int = setting("GATEWAY_PORT", 8000, "listen port", group=HTTP, bounds=PORT)
    header_timeout_seconds: float = setting(
        "GATEWAY_HEADER_TIMEOUT_SECONDS",
        10.0,
        "seconds a client has to send a request's head (request line and headers), counted from its "
        "connection or, on a kept-alive connection, from the head's first byte; then the connection is "
        "closed (after a 408 when part of a head came), however slowly bytes keep arriving",
        group=HTTP,
        bounds=POSITIVE,
    )
    body_timeout_seconds: float = setting(
        "GATEWAY_BODY_TIMEOUT_SECONDS",
        30.0,
        "seconds a request body (JSON or multipart) may go without a byte while the gateway reads it; "
        "then 408 (`BAD_REQUEST`) and the connection is closed",
        group=HTTP,
        bounds=POSITIVE,
    )
    keepalive_seconds: float = setting(
        "GATEWAY_KEEPALIVE_SECONDS",
        75.0,
        "seconds an idle kept-alive connection stays open between two requests; behind a load balancer, "
        "set it above the balancer's own idle timeout (60 s for most)",
        group=HTTP,
        bounds=POSITIVE,
    )
    log_level: str = setting(
        "GATEWAY_LOG_LEVEL",
        "INFO",
        "log level (`WARNING` drops the access line of each operation)",
        group=HTTP,
        case="upper",
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
    )
    log_format: str = setting(
        "GATEWAY_LOG_FORMAT",
        "",
        "`json`: one JSON object a line; `text`: lines for people; empty: text on a terminal, JSON otherwise",
        group=HTTP,
        case="lower",
        choices=("", "json", "text"),
    )
    http_access_log: bool = setting(
        "GATEWAY_HTTP_ACCESS_LOG",
        False,
        "`1`: a line per HTTP request too (`aiohttp.access`, arguments handed to the logger unformatted); "
        "off, no access logger is installed and it costs nothing",
        group=HTTP,
    )
    cors_origins: tuple[str, ...] = setting(
        "GATEWAY_CORS_ORIGINS",
        (),
        "comma-separated origins (`https://app.example.com,capacitor://localhost`) whose pages may call "
        "the API: preflights are answered and responses carry CORS headers (credentials allowed; a page "
        "can read a download's `Content-Range`, `Accept-Ranges`, `ETag`, `Content-Disposition` and "
        "`Content-Length`, and any answer's `Retry-After` and `X-Request-Id`), and WebSockets from them "
        "are admitted; `*` (alone) is any origin, without credentials; empty: same-origin only (clients "
        "that send no `Origin` always work)",
        group=HTTP,
        check=origins_problem,
    )
    trusted_proxies: tuple[str, ...] = setting(
        "GATEWAY_TRUSTED_PROXIES",
        (),
        "comma-separated IPs or CIDRs of proxies in front of the gateway (`10.0.0.0/8,::1`); behind one, "
        "the client is the right-most `X-Forwarded-For` hop that is not a trusted proxy; empty: the "
        "socket's peer",
        group=HTTP,
        check=networks_problem,
    )
    trusted_documents: Path | None = setting(
        "GATEWAY_TRUSTED_DOCUMENTS",
        None,
        'a JSON manifest of trusted documents (`{"<sha256>": "<document>"}`, or Apollo\'s '
        '`{"operations": [{"id", "body"}]}`); when set, nothing else runs (`PERSISTED_QUERY_NOT_FOUND`); '
        "every hash must be its document's SHA-256 or the gateway does not start",
        group=HTTP,
        check=file_problem,
    )
    introspection: bool | None = setting(
        "GATEWAY_INTROSPECTION",
        None,
        "`1` lets anyone read the schema through introspection (`__schema`, `__type`: what GraphiQL's "
        "docs and completion and code generators read), also with trusted documents, where "
        "introspection-only queries then run without being in the manifest; `0` turns it off",
        group=HTTP,
        default_text="on on the embedded node; off with `CASSANDRA_CONTACT_POINTS` or "
        "`GATEWAY_TRUSTED_DOCUMENTS`",
    )
    metrics_token: str = setting(
        "GATEWAY_METRICS_TOKEN",
        "",
        "bearer token `GET /metrics` requires (`Authorization: Bearer <token>`, Prometheus' "
        "`authorization` or `bearer_token_file`), at least 32 characters on a real cluster; empty: "
        "`/metrics` is open on the embedded node and answers 404 with `CASSANDRA_CONTACT_POINTS`",
        group=HTTP,
        secret=True,
    )
    query_metrics: bool = setting(
        "GATEWAY_QUERY_METRICS",
        False,
        "`1`: every response carries `extensions.cql.statements` (and `lwtRetries`)",
        group=HTTP,
    )
    plain_fields: bool = setting(
        "GATEWAY_PLAIN_FIELDS",
        True,
        "`1`: queries run on the plain-field fast executor (`gateway/graph/plain_fields.py`), fields "
        "with a resolver on lean resolvers where Strawberry's layers have nothing to do, and a document "
        "run before skips the steps that depend on its text alone (`KnownDocuments`); `0`: on "
        "graphql-core's reference executor with Strawberry's resolvers and Strawberry's own `execute`",
        group=HTTP,
    )
    seed: bool = setting(
        "GATEWAY_SEED", False, "`1`: `serve` loads demo data once Cassandra is ready", group=HTTP
    )
    public_max_age: int = setting(
        "GATEWAY_PUBLIC_MAX_AGE",
        0,
        "seconds a browser or a shared cache may reuse an anonymous GraphQL GET answer without asking "
        "(`Cache-Control: public, max-age=N`); `0`: they keep it but revalidate it each time "
        "(`If-None-Match`, answered 304 when it is unchanged). Answers to a request with a token are "
        "always `private, no-store`",
        group=HTTP,
        bounds=Bounds("0 to 31536000 (a year)", minimum=0, maximum=ONE_YEAR),
    )

    broker_url: str = setting(
        "GATEWAY_BROKER_URL",
        "",
        "`redis://host:port/db` of the Redis that gateway processes share subscriptions, session "
        "revocations, persisted queries and rate limits through, or "
        "`redis+cluster://host:port,host:port,...` (`rediss+cluster://` for TLS) of a Redis Cluster "
        "(7 or later) to discover from: events then go "
        "through sharded pub/sub; empty: one process, all in memory",
        group=PROCESSES,
        check=broker_url_problem,
    )
    drain_seconds: float = setting(
        "GATEWAY_DRAIN_SECONDS",
        10.0,
        "on SIGTERM, how long requests in flight may take to finish before the process exits",
        group=PROCESSES,
        bounds=NOT_NEGATIVE,
    )

    max_in_flight: int = setting(
        "GATEWAY_MAX_IN_FLIGHT",
        256,
        "most HTTP requests one process handles at once; one more is refused at once with 503, "
        "`Retry-After` and `UNAVAILABLE` instead of waiting (the probes, `/metrics` and WebSocket "
        "upgrades are never refused); `0`: no bound",
        group=PROCESSES,
        bounds=NOT_NEGATIVE,
    )
    max_queued_statements: int = setting(
        "GATEWAY_MAX_QUEUED_STATEMENTS",
        2048,
        "CQL statements in flight on one process (of requests, sockets and deliveries) from which a "
        "new HTTP request is refused the same way; the statements of requests already admitted always "
        "run; `0`: no bound",
        group=PROCESSES,
        bounds=NOT_NEGATIVE,
    )
    shed_retry_after_seconds: int = setting(
        "GATEWAY_SHED_RETRY_AFTER_SECONDS",
        1,
        "the `Retry-After` (and `extensions.retryAfter`) of a request refused because the process is "
        "at one of its bounds",
        group=PROCESSES,
        bounds=Bounds("1 to 3600", minimum=1, maximum=3600),
    )

    contact_points: tuple[str, ...] = setting(
        "CASSANDRA_CONTACT_POINTS",
        (),
        "comma-separated hosts of a real cluster; empty means the embedded node",
        group=CASSANDRA,
    )
    cassandra_port: int = setting(
        "CASSANDRA_PORT",
        9042,
        "CQL port (of the cluster, or of the embedded node)",
        group=CASSANDRA,
        bounds=PORT,
    )
    keyspace: str = setting(
        "CASSANDRA_KEYSPACE",
        "gateway",
        "keyspace, created on first start",
        group=CASSANDRA,
        check=keyspace_problem,
    )
    username: str | None = setting(
        "CASSANDRA_USERNAME", None, "PasswordAuthenticator user name", group=CASSANDRA, strip=False
    )
    password: str | None = setting(
        "CASSANDRA_PASSWORD",
        None,
        "PasswordAuthenticator password",
        group=CASSANDRA,
        strip=False,
        secret=True,
    )
    local_dc: str | None = setting(
        "CASSANDRA_LOCAL_DC",
        None,
        "the datacenter this gateway sends its statements to (token-aware, round robin within it; "
        "`LOCAL_QUORUM` and `LOCAL_SERIAL` are counted there); one of `CASSANDRA_REPLICATION`'s "
        "datacenters, required when it names several",
        group=CASSANDRA,
        check=datacenter_problem,
        default_text="the first contact point's",
    )
    replication: str = setting(
        "CASSANDRA_REPLICATION",
        "SimpleStrategy:1",
        "replication of the keyspace when the gateway creates it: `SimpleStrategy:N`, or `dc1:3,dc2:3` "
        "for NetworkTopologyStrategy with that many replicas in each datacenter (each 1 or more, each "
        "named once)",
        group=CASSANDRA,
        check=replication_problem,
        default_text=f"`SimpleStrategy:1` embedded, `{CLUSTER_REPLICATION}` with contact points",
    )
    request_timeout: float = setting(
        "CASSANDRA_REQUEST_TIMEOUT",
        5.0,
        "seconds before a statement is abandoned (`UNAVAILABLE`)",
        group=CASSANDRA,
        bounds=POSITIVE,
    )
    connect_timeout: float = setting(
        "CASSANDRA_CONNECT_TIMEOUT",
        5.0,
        "seconds to establish a connection",
        group=CASSANDRA,
        bounds=POSITIVE,
    )
    consistency: str = setting(
        "CASSANDRA_CONSISTENCY",
        "LOCAL_QUORUM",
        "consistency level of every statement",
        group=CASSANDRA,
        case="upper",
        choices=CONSISTENCY_LEVELS,
    )
    serial_consistency: str = setting(
        "CASSANDRA_SERIAL_CONSISTENCY",
        "LOCAL_SERIAL",
        "consistency of the Paxos phase of lightweight transactions",
        group=CASSANDRA,
        case="upper",
        choices=SERIAL_CONSISTENCY_LEVELS,
    )
    cassandra_io: str = setting(
        "CASSANDRA_IO",
        "loop",
        "where the served gateway reads and writes its Cassandra sockets: `loop`, on its own event loop "
        "(a response is decoded where it is awaited, no hand-off between threads); `thread`, on the "
        "driver's own I/O thread (libev), as the command-line tools always do",
        group=CASSANDRA,
        case="lower",
        choices=("loop", "thread"),
    )
    direct_reads: bool = setting(
        "CASSANDRA_DIRECT_READS",
        True,
        "`1`: reads on the event loop's connections (`CASSANDRA_IO=loop`) skip the driver's "
        "`ResponseFuture`; `0`: every statement takes the driver's full path",
        group=CASSANDRA,
    )
    cql_dir: Path | None = setting(
        "GATEWAY_CQL_DIR",
        None,
        "where migrations are read from",
        group=CASSANDRA,
        default_text="`cql/` of the checkout",
    )

    max_depth: int = setting("GATEWAY_MAX_DEPTH", 12, "deepest query accepted", group=LIMITS, bounds=POSITIVE)
    max_aliases: int = setting(
        "GATEWAY_MAX_ALIASES", 30, "most aliases in one document", group=LIMITS, bounds=POSITIVE
    )
    max_tokens: int = setting(
        "GATEWAY_MAX_TOKENS", 2000, "most lexical tokens in one document", group=LIMITS, bounds=POSITIVE
    )
    max_fragments: int = setting(
        "GATEWAY_MAX_FRAGMENTS",
        100,
        "most fragment definitions in one document",
        group=LIMITS,
        bounds=POSITIVE,
    )
    max_cost: int = setting(
        "GATEWAY_MAX_COST",
        50000,
        "most a request (a whole batch together) may cost before anything runs; the formula is in "
        "`gateway/graph/cost.py` (the default is the execution-time budget of 5000 list items with ten "
        "fields each)",
        group=LIMITS,
        bounds=POSITIVE,
    )
    max_batch: int = setting(
        "GATEWAY_MAX_BATCH",
        10,
        "most operations in one batched request (a JSON array)",
        group=LIMITS,
        bounds=POSITIVE,
    )
    max_response_bytes: int = setting(
        "GATEWAY_MAX_RESPONSE_BYTES",
        16 * 1024 * 1024,
        "largest GraphQL response body (before compression), over HTTP and WebSocket; a larger one is "
        "replaced by a `QUERY_TOO_COMPLEX` error with `extensions.limit`",
        group=LIMITS,
        bounds=POSITIVE,
    )
    max_json_bytes: int = setting(
        "GATEWAY_MAX_JSON_BYTES",
        1024 * 1024,
        "largest JSON request body (1 MiB; more is `BAD_REQUEST`, HTTP 413); also the most a multipart "
        "upload's `operations` field may have (its `map` at most 64 KiB, each file 25 MB)",
        group=LIMITS,
        bounds=POSITIVE,
    )

    max_sockets: int = setting(
        "GATEWAY_MAX_SOCKETS",
        10000,
        "most WebSockets one process holds open (more: closed with 4429)",
        group=SOCKETS,
        bounds=POSITIVE,
    )
    max_sockets_per_user: int = setting(
        "GATEWAY_MAX_SOCKETS_PER_USER",
        20,
        "most WebSockets of one signed-in user per process (more: closed with 4429 at `connection_init`)",
        group=SOCKETS,
        bounds=POSITIVE,
    )
    max_sockets_per_address: int = setting(
        "GATEWAY_MAX_SOCKETS_PER_ADDRESS",
        500,
        "most WebSockets one client address holds open per process (IPv6 per /64; behind a proxy the "
        "address `GATEWAY_TRUSTED_PROXIES` names, as for rate limits; more: closed with 4429 right "
        "after the handshake)",
        group=SOCKETS,
        bounds=POSITIVE,
    )
    ws_idle_seconds: float = setting(
        "GATEWAY_WS_IDLE_SECONDS",
        300.0,
        "seconds a WebSocket may stay open with no operation running and no message from its client "
        "(then closed with 4410; signed in or not)",
        group=SOCKETS,
        bounds=POSITIVE,
    )
    max_subscriptions_per_socket: int = setting(
        "GATEWAY_MAX_SUBSCRIPTIONS_PER_SOCKET",
        100,
        "most operations one WebSocket runs at once, subscriptions and queries or mutations still "
        "running alike (one more: `QUERY_TOO_COMPLEX` for that operation, the socket stays open)",
        group=SOCKETS,
        bounds=POSITIVE,
    )
    max_subscriptions_per_user: int = setting(
        "GATEWAY_MAX_SUBSCRIPTIONS_PER_USER",
        200,
        "most operations a signed-in user runs at once over all their WebSockets of a process (one "
        "more: `QUERY_TOO_COMPLEX` for that operation)",
        group=SOCKETS,
        bounds=POSITIVE,
    )
    live_recheck_seconds: float = setting(
        "GATEWAY_LIVE_RECHECK_SECONDS",
        60.0,
        "how often a live subscription's right to its events is read again from Cassandra (room "
        "membership: one read per room and process), so a leave or deletion whose broker event was "
        "lost still ends it",
        group=SOCKETS,
        bounds=POSITIVE,
    )
    ws_keep_alive_seconds: float = setting(
        "GATEWAY_WS_KEEP_ALIVE_SECONDS",
        15.0,
        "seconds between WebSocket pings (and legacy `graphql-ws` `ka` messages); a peer that does not "
        "answer a ping is dropped",
        group=SOCKETS,
        bounds=POSITIVE,
    )
    ws_init_timeout_seconds: float = setting(
        "GATEWAY_WS_INIT_TIMEOUT_SECONDS",
        10.0,
        "seconds a WebSocket may take to send `connection_init` (then closed with 4408)",
        group=SOCKETS,
        bounds=POSITIVE,
    )
    ws_send_buffer_bytes: int = setting(
        "GATEWAY_WS_SEND_BUFFER_BYTES",
        1024 * 1024,
        "bytes of subscription results that may wait in one WebSocket's send buffer; a socket whose "
        "peer falls further behind is cut off (close 1013, then dropped) instead of buffered",
        group=SOCKETS,
        bounds=POSITIVE,
    )
    ws_compression: bool = setting(
        "GATEWAY_WS_COMPRESSION",
        False,
        "offer per-message deflate on WebSockets (off: every socket's frames of one event are the same "
        "bytes, written without compressing each)",
        group=SOCKETS,
    )
    presence_ttl_seconds: float = setting(
        "GATEWAY_PRESENCE_TTL_SECONDS",
        30.0,
        "with a broker: how long a process's claim that a user is online lasts unrenewed (renewed every "
        "third of it), so the users of a process that dies show offline within this",
        group=SOCKETS,
        bounds=POSITIVE,
    )

    session_ttl_days: float = setting(
        "GATEWAY_SESSION_TTL_DAYS",
        30.0,
        "lifetime of a session token, in days (fractions allowed: `0.5` is twelve hours); its WebSockets "
        "close when it ends",
        group=SESSIONS,
        aliases=("SESSION_TTL_DAYS",),
        bounds=at_least(1 / 86400, "at least one second"),
    )
    session_cache_size: int = setting(
        "GATEWAY_SESSION_CACHE_SIZE",
        10000,
        "sessions each process keeps in memory after their first lookup, so an authenticated request "
        "reads no `sessions` row while its session is known; the least recently used go first. Dropped "
        "at once by `signOut` on any process (through the broker), never kept past the session's "
        "expiry, and not used while the broker's revocations channel is unreachable; `0`: every "
        "request reads its session",
        group=SESSIONS,
        bounds=NOT_NEGATIVE,
    )
    session_cache_seconds: float = setting(
        "GATEWAY_SESSION_CACHE_SECONDS",
        60.0,
        "the longest a process trusts a session it keeps in memory before reading it again: the bound "
        "on how long a revocation the broker lost (rather than one it was down for, which clears the "
        "cache) can go unseen",
        group=SESSIONS,
        bounds=POSITIVE,
    )
    argon2_time_cost: int = setting(
        "GATEWAY_ARGON2_TIME_COST",
        3,
        "argon2id iterations of a password hash",
        group=SESSIONS,
        aliases=("ARGON2_TIME_COST",),
        bounds=POSITIVE,
    )
    argon2_memory_cost_kib: int = setting(
        "GATEWAY_ARGON2_MEMORY_COST_KIB",
        65536,
        "argon2id memory of a password hash, in KiB",
        group=SESSIONS,
        aliases=("ARGON2_MEMORY_COST_KIB",),
        bounds=POSITIVE,
    )
    argon2_parallelism: int = setting(
        "GATEWAY_ARGON2_PARALLELISM",
        4,
        "argon2id lanes of a password hash",
        group=SESSIONS,
        aliases=("ARGON2_PARALLELISM",),
        bounds=POSITIVE,
    )
    password_threads: int = setting(
        "GATEWAY_PASSWORD_THREADS",
        0,
        "threads that hash passwords (argon2), apart from everything else; `0`: one per core",
        group=SESSIONS,
        bounds=NOT_NEGATIVE,
    )
    password_queue: int = setting(
        "GATEWAY_PASSWORD_QUEUE",
        32,
        "password hashes that may wait for a thread; beyond that `signIn`/`signUp` answer `RATE_LIMITED` "
        "at once",
        group=SESSIONS,
        bounds=NOT_NEGATIVE,
    )

    rate_sign_in: str = setting(
        "GATEWAY_RATE_SIGN_IN",
        "30/m",
        "`signIn` attempts per client address",
        group=RATES,
        check=rate_problem,
    )
    rate_sign_in_login: str = setting(
        "GATEWAY_RATE_SIGN_IN_LOGIN",
        "100/h",
        "`signIn` attempts per login, from every address together, but for the addresses that login "
        "signed in from within 30 days (they are not counted); beyond it an attempt waits for the "
        "bucket (`RATE_LIMITED`, a wait of the period over the count), which slows guessing spread over "
        "many addresses without locking the owner out",
        group=RATES,
        check=rate_problem,
    )
    rate_sign_up: str = setting(
        "GATEWAY_RATE_SIGN_UP", "20/h", "`signUp` per client address", group=RATES, check=rate_problem
    )
    rate_comments: str = setting(
        "GATEWAY_RATE_COMMENTS",
        "20/10m",
        "anonymous `addComment` per client address",
        group=RATES,
        check=rate_problem,
    )
    rate_sends: str = setting(
        "GATEWAY_RATE_SENDS",
        "120/m",
        "`sendMessage`, `postRoomMessage` and `sendEmail` together, per user",
        group=RATES,
        check=rate_problem,
    )
    rate_presence: str = setting(
        "GATEWAY_RATE_PRESENCE",
        "30/m",
        "`setPresenceVisible`, per user",
        group=RATES,
        check=rate_problem,
    )
    rate_typing: str = setting(
        "GATEWAY_RATE_TYPING",
        "60/m",
        "`setTyping`, per user",
        group=RATES,
        check=rate_problem,
    )
    rate_uploads: str = setting(
        "GATEWAY_RATE_UPLOADS",
        "60/h",
        "`uploadContacts` and emails with attachments, per user",
        group=RATES,
        check=rate_problem,
    )
    rate_verification_requests: str = setting(
        "GATEWAY_RATE_VERIFICATION_REQUESTS",
        "5/h",
        "identity verification codes requested, per user",
        group=RATES,
        check=rate_problem,
    )
    rate_wrong_codes: str = setting(
        "GATEWAY_RATE_WRONG_CODES",
        "10/h",
        "wrong verification codes, per user",
        group=RATES,
        check=rate_problem,
    )
    rate_identity_lookups: str = setting(
        "GATEWAY_RATE_IDENTITY_LOOKUPS",
        "1000/d",
        "identities an address-book upload newly answers with their user, per user (identities answered "
        "before are not counted again)",
        group=RATES,
        check=rate_problem,
    )
    rate_persisted_queries: str = setting(
        "GATEWAY_RATE_PERSISTED_QUERIES",
        "100/h",
        "automatic persisted queries registered (documents the gateway did not know yet), per client "
        "address; over it the operation still runs, but its document is not remembered",
        group=RATES,
        check=rate_problem,
    )
    sign_in_free_failures: int = setting(
        "GATEWAY_SIGN_IN_FREE_FAILURES",
        5,
        "failed `signIn`s in a row for one login from one client address before each further attempt "
        "from there must wait",
        group=RATES,
        bounds=NOT_NEGATIVE,
    )
    sign_in_backoff: float = setting(
        "GATEWAY_SIGN_IN_BACKOFF",
        1.0,
        "seconds the first such wait lasts; it doubles with each further failure, and a success resets it",
        group=RATES,
        bounds=POSITIVE,
    )
    sign_in_backoff_max: float = setting(
        "GATEWAY_SIGN_IN_BACKOFF_MAX",
        900.0,
        "the longest such wait, in seconds",
        group=RATES,
        bounds=POSITIVE,
    )

    messenger_bucket: str = setting(
        "GATEWAY_MESSENGER_BUCKET",
        "month",
        f"time bucket of conversation partitions {_BUCKET}",
        group=MESSENGER,
        aliases=("MESSENGER_BUCKET",),
        check=bucket_problem,
    )
    messenger_activity_slot: int = setting(
        "GATEWAY_MESSENGER_ACTIVITY_SLOT",
        60,
        "seconds per slot of the talk-partner recency index (`gateway/messenger/activity_store.py`; after "
        "changing it, run `gateway backfill messenger`)",
        group=MESSENGER,
        aliases=("MESSENGER_ACTIVITY_SLOT",),
        bounds=POSITIVE,
    )
    room_bucket: str = setting(
        "GATEWAY_ROOM_BUCKET",
        "day",
        f"time bucket of room history partitions {_BUCKET}",
        group=MESSENGER,
        aliases=("ROOM_BUCKET",),
        check=bucket_problem,
    )
    room_max_participants: int = setting(
        "GATEWAY_ROOM_MAX_PARTICIPANTS",
        1000,
        "most participants a room may have; the next join is `CONFLICT`",
        group=MESSENGER,
        aliases=("ROOM_MAX_PARTICIPANTS",),
        bounds=POSITIVE,
    )
    typing_seconds: float = setting(
        "GATEWAY_TYPING_SECONDS",
        6.0,
        "how long a `setTyping(typing: true)` holds without renewal before subscribers hear `typing: false`",
        group=MESSENGER,
        bounds=POSITIVE,
    )
    rooms_per_user_max: int = setting(
        "GATEWAY_ROOMS_PER_USER_MAX",
        200,
        "most rooms a user may be in (creating a room is joining it); the next join is `CONFLICT`",
        group=MESSENGER,
        aliases=("ROOMS_PER_USER_MAX",),
        bounds=POSITIVE,
    )

    blog_post_bucket: str = setting(
        "GATEWAY_BLOG_POST_BUCKET",
        "month",
        f'time bucket of tag and "all posts" timelines {_BUCKET}',
        group=BLOG,
        aliases=("BLOG_POST_BUCKET",),
        check=bucket_problem,
    )
    blog_author_bucket: str = setting(
        "GATEWAY_BLOG_AUTHOR_BUCKET",
        "year",
        f"time bucket of an author's list of posts {_BUCKET}",
        group=BLOG,
        aliases=("BLOG_AUTHOR_BUCKET",),
        check=bucket_problem,
    )
    blog_comment_bucket: str = setting(
        "GATEWAY_BLOG_COMMENT_BUCKET",
        "day",
        f"time bucket of comment threads {_BUCKET}",
        group=BLOG,
        aliases=("BLOG_COMMENT_BUCKET",),
        check=bucket_problem,
    )

    mail_bucket: str = setting(
        "GATEWAY_MAIL_BUCKET",
        "month",
        f"time bucket of folder listings {_BUCKET}",
        group=MAIL,
        aliases=("MAIL_BUCKET",),
        check=bucket_problem,
    )
    public_url: str = setting(
        "GATEWAY_PUBLIC_URL",
        "",
        "the origin (and path prefix, e.g. `https://api.example.com/mail`) that `Attachment.url` starts "
        "with; empty, `Attachment.url` is a path (`/attachments/...`) on the origin the API is served "
        "from (never built from the request's `Host`, which the client chooses)",
        group=MAIL,
        check=public_url_problem,
    )
    url_signing_secret: str = setting(
        "GATEWAY_URL_SIGNING_SECRET",
        "",
        "HMAC key of download links, at least 32 characters (`openssl rand -hex 32`); required with "
        "`CASSANDRA_CONTACT_POINTS`, the same on every gateway process, and never a value published with "
        "the gateway (compose.yaml's demo value, the docs' examples)",
        group=MAIL,
        check=signing_secret_problem,
        secret=True,
        default_text="random per process, embedded node only (a warning says so)",
    )
    download_url_ttl_seconds: int = setting(
        "GATEWAY_DOWNLOAD_URL_TTL_SECONDS",
        900,
        "how long a download link works (rounded up by at most a fifteenth, so repeated queries return "
        "the same URL)",
        group=MAIL,
        bounds=POSITIVE,
    )

    contacts_identity_pepper: str = setting(
        "GATEWAY_CONTACTS_IDENTITY_PEPPER",
        "insecure-development-pepper",
        "secret HMAC key of the identity hashes, the same on every gateway process; required on a real "
        "cluster (with `CASSANDRA_CONTACT_POINTS` set the gateway does not start on the default, on a value "
        "published with it, or on fewer than 32 characters: `openssl rand -hex 32`); keep it stable",
        group=CONTACTS,
        aliases=("CONTACTS_IDENTITY_PEPPER",),
        secret=True,
        default_text="`insecure-development-pepper` (embedded node only)",
    )
    contacts_default_country_code: str = setting(
        "GATEWAY_CONTACTS_DEFAULT_COUNTRY_CODE",
        "",
        "calling code for national phone numbers (`31`); empty accepts international numbers only",
        group=CONTACTS,
        aliases=("CONTACTS_DEFAULT_COUNTRY_CODE",),
        check=country_code_problem,
    )
    contacts_max_in_flight: int = setting(
        "GATEWAY_CONTACTS_MAX_IN_FLIGHT",
        64,
        "most Cassandra requests an address-book upload or a link's fan-out keeps in flight per process",
        group=CONTACTS,
        aliases=("CONTACTS_MAX_IN_FLIGHT",),
        bounds=POSITIVE,
    )
    contacts_upload_lease_seconds: int = setting(
        "GATEWAY_CONTACTS_UPLOAD_LEASE_SECONDS",
        120,
        "lease of a running address-book upload; the upload renews it three times per term while it "
        "runs, so it only matters when a process dies mid-upload",
        group=CONTACTS,
        aliases=("CONTACTS_UPLOAD_LEASE_SECONDS",),
        bounds=at_least(2),
    )
    contacts_fanout_poll_seconds: float = setting(
        "GATEWAY_CONTACTS_FANOUT_POLL_SECONDS",
        5.0,
        "seconds between a worker's looks for fan-out jobs whose worker died (`gateway/contacts/fanout.py`)",
        group=CONTACTS,
        aliases=("CONTACTS_FANOUT_POLL_SECONDS",),
        bounds=POSITIVE,
    )
    contacts_fanout_batch: int = setting(
        "GATEWAY_CONTACTS_FANOUT_BATCH",
        200,
        "uploaders a fan-out worker handles per page (and per progress record)",
        group=CONTACTS,
        aliases=("CONTACTS_FANOUT_BATCH",),
        bounds=POSITIVE,
    )
    contacts_fanout_lease_seconds: float = setting(
        "GATEWAY_CONTACTS_FANOUT_LEASE_SECONDS",
        30.0,
        "how long a fan-out worker's lease lasts without progress before another may take the job",
        group=CONTACTS,
        aliases=("CONTACTS_FANOUT_LEASE_SECONDS",),
        bounds=POSITIVE,
    )
    verification_webhook_url: str = setting(
        "GATEWAY_VERIFICATION_WEBHOOK_URL",
        "",
        'where identity verification codes are POSTed as JSON `{"network", "networkId", "code", '
        '"expiresAt"}` (your SMS or email sender; any 2xx is a delivery); required with '
        "`CASSANDRA_CONTACT_POINTS`; empty, on the embedded development node only, the code is written to "
        "the server log at WARNING",
        group=CONTACTS,
    )
    verification_code_ttl_seconds: int = setting(
        "GATEWAY_VERIFICATION_CODE_TTL_SECONDS",
        600,
        "how long a verification code is valid",
        group=CONTACTS,
        aliases=("VERIFICATION_CODE_TTL_SECONDS",),
        bounds=POSITIVE,
    )
    verification_max_wrong_codes: int = setting(
        "GATEWAY_VERIFICATION_MAX_WRONG_CODES",
        5,
        "wrong codes that burn a code (`RATE_LIMITED` until it would have expired)",
        group=CONTACTS,
        aliases=("VERIFICATION_MAX_WRONG_CODES",),
        bounds=POSITIVE,
    )
    verification_webhook_timeout: float = setting(
        "GATEWAY_VERIFICATION_WEBHOOK_TIMEOUT",
        5.0,
        "seconds per webhook attempt",
        group=CONTACTS,
        aliases=("VERIFICATION_WEBHOOK_TIMEOUT",),
        bounds=POSITIVE,
    )
    verification_webhook_attempts: int = setting(
        "GATEWAY_VERIFICATION_WEBHOOK_ATTEMPTS",
        3,
        "webhook attempts before `UNAVAILABLE`",
        group=CONTACTS,
        aliases=("VERIFICATION_WEBHOOK_ATTEMPTS",),
        bounds=POSITIVE,
    )

    otel_sdk_disabled: bool = setting(
        "OTEL_SDK_DISABLED",
        False,
        "`true`: no spans, whatever the variables below say",
        group=TRACING,
    )
    otel_traces_exporter: tuple[str, ...] = setting(
        "OTEL_TRACES_EXPORTER",
        (),
        "where spans go: `otlp` (OTLP over HTTP/protobuf), `console` (one JSON object per span on "
        "standard output, for development), or both comma-separated; `none`, or empty while no OTLP "
        "endpoint is set: tracing is off and costs nothing",
        group=TRACING,
        check=trace_exporters_problem,
        default_text="empty (`otlp` when an endpoint below is set)",
    )
    otel_exporter_otlp_endpoint: str = setting(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "",
        "base URL of the OpenTelemetry collector (`http://collector:4318`); spans are POSTed to "
        "`<it>/v1/traces`. Setting it turns tracing on unless `OTEL_TRACES_EXPORTER` says otherwise",
        group=TRACING,
        check=http_url_problem,
        default_text="empty (`http://localhost:4318` when `OTEL_TRACES_EXPORTER=otlp`)",
    )
    otel_exporter_otlp_traces_endpoint: str = setting(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "",
        "the full URL spans are POSTed to, instead of the base endpoint's `/v1/traces`; setting it turns "
        "tracing on as the base endpoint does",
        group=TRACING,
        check=http_url_problem,
    )
    otel_exporter_otlp_protocol: str = setting(
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "",
        "the OTLP transport: the gateway ships the HTTP/protobuf exporter only, so `grpc` is refused "
        "(collectors take OTLP over HTTP on port 4318)",
        group=TRACING,
        case="lower",
        choices=("", "http/protobuf"),
        default_text="`http/protobuf`",
    )
    otel_service_name: str = setting(
        "OTEL_SERVICE_NAME",
        "gateway",
        "the spans' `service.name`; the SDK itself reads the other standard variables "
        "(`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*`, "
        "...: [operations.md](operations.md#tracing))",
        group=TRACING,
    )

    @property
    def embedded(self) -> bool:
        """No contact points: the gateway uses the local node the development tooling runs."""
        return not self.contact_points

    @property
    def introspection_allowed(self) -> bool:
        """``GATEWAY_INTROSPECTION`` when set; else on for the embedded development node only:
        a real cluster does not hand its whole schema (every field a probe could aim at) to
        anyone who asks, and trusted documents lock the gateway to known operations (then
        GraphiQL and tools must be let in explicitly)."""
        if self.introspection is not None:
            return self.introspection
        return self.embedded and self.trusted_documents is None

    @property
    def metrics_open(self) -> bool:
        """Whether ``/metrics`` answers without a token: on the embedded node when none is set."""
        return self.embedded and not self.metrics_token

    @property
    def trace_exporters(self) -> tuple[str, ...]:
        """Where spans go (``otlp``, ``console``); empty: tracing is off. ``OTEL_TRACES_EXPORTER``
        when set; else ``otlp`` when an OTLP endpoint is, as the OpenTelemetry SDKs do, but off
        with neither (the SDKs' own default of ``otlp`` to localhost would turn every gateway's
        tracing on)."""
        if self.otel_sdk_disabled:
            return ()
        if self.otel_traces_exporter:
            return tuple(name.lower() for name in self.otel_traces_exporter if name.lower() != "none")
        if self.otel_exporter_otlp_endpoint or self.otel_exporter_otlp_traces_endpoint:
            return ("otlp",)
        return ()

    @property
    def otlp_traces_url(self) -> str:
        """Where the OTLP exporter POSTs spans."""
        if self.otel_exporter_otlp_traces_endpoint:
            return self.otel_exporter_otlp_traces_endpoint
        base = self.otel_exporter_otlp_endpoint or "http://localhost:4318"
        return base.rstrip("/") + "/v1/traces"

    def rate_variables(self) -> dict[str, str]:
        """Each rate limit's environment variable and value."""
        rates = (item for item in declared(Settings) if item[1].check is rate_problem)
        return {spec.variable: getattr(self, item.name) for item, spec in rates}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings ``environ`` (the process environment by default) gives.

        A value that is not of its setting's type, or that its declaration refuses, raises
        SettingsError naming the variable it was read from (an old name, if that is what is set).
        """
        values, sources = read_env(cls, environ)
        raise_problems(problems(cls, values, sources))
        if values.get("contact_points") and "replication" not in values:
            values["replication"] = CLUSTER_REPLICATION
        return cls(**values)

    def validate(self) -> Settings:
        """Fail at start-up, naming the variable, rather than on the first request."""
        raise_problems(problems(Settings, values_of(self)) + self._rules())
        return self

    def _datacenter_rules(self) -> list[tuple[str, str]]:
        """CASSANDRA_LOCAL_DC against the datacenters CASSANDRA_REPLICATION names."""
        try:
            datacenters = replication_datacenters(self.replication)
        except ValueError:
            return []  # CASSANDRA_REPLICATION's own check says what is wrong
        if datacenters is None:
            return []
        name, listed = "CASSANDRA_LOCAL_DC", ", ".join(datacenters)
        if self.local_dc is None and len(datacenters) > 1:
            return [
                (
                    name,
                    f"{name} must be set when CASSANDRA_REPLICATION names several datacenters ({listed}): "
                    "it is the one this gateway's statements go to and LOCAL_QUORUM is counted in",
                )
            ]
        if self.local_dc is not None and self.local_dc not in datacenters:
            return [
                (
                    name,
                    f"{name} is {self.local_dc!r}, which CASSANDRA_REPLICATION ({self.replication}) gives "
                    f"no replica: it must be one of {listed}",
                )
            ]
        return []

    def _rules(self) -> list[tuple[str, str]]:
        """The rules no single setting can state."""
        found = self._datacenter_rules()
        if ANY_ORIGIN in self.cors_origins and len(self.cors_origins) > 1:
            found.append(
                ("GATEWAY_CORS_ORIGINS", "GATEWAY_CORS_ORIGINS: '*' (any origin) must be the only entry")
            )
        if self.embedded:
            return found
        name = "GATEWAY_URL_SIGNING_SECRET"
        if not self.url_signing_secret:
            found.append((name, f"{name} must be set with CASSANDRA_CONTACT_POINTS (gateways share it)"))
        elif problem := cluster_secret_problem(name, self.url_signing_secret):
            found.append((name, problem))
        name = "GATEWAY_CONTACTS_IDENTITY_PEPPER"
        if self.contacts_identity_pepper in ("", Settings.contacts_identity_pepper):
            found.append(
                (
                    name,
                    f"{name} must be set to a secret of your own on a real cluster (CASSANDRA_CONTACT_POINTS "
                    "is set): with the public default, identity hashes are reversed by trying every number",
                )
            )
        elif problem := cluster_secret_problem(name, self.contacts_identity_pepper):
            found.append((name, problem))
        name = "GATEWAY_METRICS_TOKEN"
        if self.metrics_token and (problem := cluster_secret_problem(name, self.metrics_token)):
            found.append((name, problem))
        if not self.verification_webhook_url:
            name = "GATEWAY_VERIFICATION_WEBHOOK_URL"
            found.append(
                (
                    name,
                    f"{name} must be set with CASSANDRA_CONTACT_POINTS: a real cluster delivers verification "
                    "codes to your sender and never writes them to its log",
                )
            )
        return found
