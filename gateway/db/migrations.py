"""Apply ``cql/*.cql`` in order, once each, recording them in the keyspace.

The files hold keyspace-independent DDL (no keyspace names), so the same files
build the embedded node's keyspace, a test run's throwaway keyspace and a real
cluster's. Every statement is written to be idempotent (``IF NOT EXISTS``), so
two gateway processes migrating at the same moment converge on the same schema.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cassandra.query import SimpleStatement

from gateway.db.session import Database
from gateway.settings import Settings
from gateway.settings.values import replication_datacenters

log = logging.getLogger(__name__)

_NAME = re.compile(r"(\d{3,})_[a-z0-9_]+\.cql")

#: Checksums recorded by earlier revisions of a migration file whose statements
#: are unchanged (only comments were corrected), so keyspaces that applied an
#: earlier revision are not reported as changed.
EARLIER_CHECKSUMS: dict[str, frozenset[str]] = {
    "003_rooms": frozenset({"4f03573f3739c8c7f12edd163a8c6c2dc6a4119027f17ea108e5bd9ef902b92f"}),
    "009_blog_author_buckets": frozenset(
        {"24b768534a8bb7abce7e82d74eafe16b37a4b53261233c4b5cf331643f348d8b"}
    ),
}
_KEYSPACE = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,47}")


#: The migrations of the checkout; an installed gateway is told where they are (``GATEWAY_CQL_DIR``).
CQL_DIR = Path(__file__).resolve().parents[2] / "cql"


@dataclass(frozen=True)
class Migration:
    version: str
    path: Path
    statements: list[str]
    checksum: str


def split_statements(text: str) -> list[str]:
    """Split a .cql file into statements: ``;`` ends one; ``--`` and ``//`` start comments."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("--") or stripped.startswith("//"):
            continue
        lines.append(line)
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def load_migrations(directory: Path | None = None) -> list[Migration]:
    directory = directory or CQL_DIR
    found = []
    for path in sorted(directory.glob("*.cql")):
        match = _NAME.fullmatch(path.name)
        if not match:
            raise ValueError(f"{path.name}: migration files are named NNN_description.cql")
        text = path.read_text(encoding="utf-8")
        found.append(
            Migration(
                version=path.stem,
                path=path,
                statements=split_statements(text),
                checksum=hashlib.sha256(text.encode()).hexdigest(),
            )
        )
    return found


def replication_map(settings: Settings) -> str:
    """``SimpleStrategy:1`` or ``dc1:3,dc2:3`` as a CQL replication map literal."""
    spec = settings.replication.strip()
    try:
        datacenters = replication_datacenters(spec)
    except ValueError as exc:
        raise ValueError(f"CASSANDRA_REPLICATION: {exc}, got {spec!r}") from None
    if datacenters is None:
        rf = int(spec.partition(":")[2] or "1")
        return f"{{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"
    parts = [f"'{dc}': {rf}" for dc, rf in datacenters.items()]
    return "{'class': 'NetworkTopologyStrategy', " + ", ".join(parts) + "}"


def check_datacenters(db: Database) -> None:
    """ValueError when CASSANDRA_REPLICATION names a datacenter the cluster does not have: the
    keyspace would keep replicas nowhere there (Cassandra refuses it, in words of its own)."""
    wanted = replication_datacenters(db.settings.replication.strip())
    if not wanted:
        return
    present = db.datacenters()
    missing = [dc for dc in wanted if dc not in present]
    if missing:
        raise ValueError(
            f"CASSANDRA_REPLICATION ({db.settings.replication}) names {', '.join(missing)}, which the "
            f"cluster does not have: its datacenters are {', '.join(sorted(present)) or 'unknown'}"
        )


def migrate(db: Database, keyspace: str | None = None) -> list[str]:
    """Create the keyspace if needed, apply pending migrations, ``USE`` the keyspace.

    Blocking (run it in a thread from async code). Returns the versions applied now.
    """
    keyspace = keyspace or db.settings.keyspace
    if not _KEYSPACE.fullmatch(keyspace):
        raise ValueError(f"invalid keyspace name {keyspace!r}")
    session = db.session
    check_datacenters(db)
    session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {replication_map(db.settings)}",
        timeout=60,
    )
    db.use_keyspace(keyspace)

    def run(cql: str, params: tuple[object, ...] | None = None) -> list[dict[str, object]]:
        return list(session.execute(SimpleStatement(cql, keyspace=keyspace), params, timeout=60))

    run(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version text PRIMARY KEY, checksum text, applied_at timestamp)"
    )
    rows = run("SELECT version, checksum FROM schema_migrations")
    applied = {row["version"]: row["checksum"] for row in rows}
    done: list[str] = []
    for migration in load_migrations(db.settings.cql_dir):
        if migration.version in applied:
            recorded = applied[migration.version]
            if recorded != migration.checksum and recorded not in EARLIER_CHECKSUMS.get(
                migration.version, frozenset()
            ):
                log.warning("migration %s changed after it was applied", migration.version)
            continue
        log.info("applying migration %s", migration.version)
        for statement in migration.statements:
            run(statement)
        run(
            "INSERT INTO schema_migrations (version, checksum, applied_at) VALUES (%s, %s, %s)",
            (migration.version, migration.checksum, datetime.now(UTC)),
        )
        done.append(migration.version)
    return done


def drop_keyspace(db: Database, keyspace: str) -> None:
    if not _KEYSPACE.fullmatch(keyspace):
        raise ValueError(f"invalid keyspace name {keyspace!r}")
    db.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
