"""``gateway migrate``: pending files applied once, in order; running again changes nothing."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import replace

import pytest

from gateway.db.migrations import drop_keyspace, load_migrations, migrate, split_statements
from gateway.db.session import CassandraUnavailable, Database, qualified
from gateway.settings import Settings


def test_split_statements_skips_comments() -> None:
    text = "-- a comment; with a semicolon\nCREATE TABLE a (k int PRIMARY KEY);\n\n// other\nDROP TABLE b;\n"
    assert split_statements(text) == ["CREATE TABLE a (k int PRIMARY KEY)", "DROP TABLE b"]


def test_migration_files_are_numbered_in_order() -> None:
    versions = [m.version for m in load_migrations()]
    assert versions == sorted(versions)
    assert versions[0].startswith("001_")


async def test_migrate_twice_changes_nothing(base_settings: Settings) -> None:
    keyspace = f"mig_{uuid.uuid4().hex[:10]}"
    db = Database(replace(base_settings, keyspace=keyspace))
    await asyncio.to_thread(db.connect)
    try:
        first = await asyncio.to_thread(migrate, db, keyspace)
        assert first == [m.version for m in load_migrations()]
        second = await asyncio.to_thread(migrate, db, keyspace)
        assert second == []
        rows = await db.execute_all("SELECT version FROM schema_migrations")
        assert sorted(r["version"] for r in rows) == first
    finally:
        await asyncio.to_thread(drop_keyspace, db, keyspace)
        await asyncio.to_thread(db.shutdown)


async def test_statements_name_their_keyspace_and_draw_no_warning(
    base_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """The stores' CQL names no keyspace: each Database prepares it with its tables
    qualified. Two keyspaces in one process read their own rows through the same text,
    and Cassandra sends no advice to qualify table names (the same condition makes it
    log an ERROR for every statement, every minute)."""
    keyspaces = [f"qual_{uuid.uuid4().hex[:10]}" for _ in range(2)]
    dbs = [Database(replace(base_settings, keyspace=keyspace)) for keyspace in keyspaces]
    try:
        for db, keyspace in zip(dbs, keyspaces, strict=True):
            await asyncio.to_thread(db.connect)
            await asyncio.to_thread(migrate, db, keyspace)
        insert = "INSERT INTO schema_migrations (version, checksum) VALUES (?, ?)"
        await dbs[0].execute(insert, ("999_only_in_the_first", "x"))
        with caplog.at_level(logging.WARNING, logger="cassandra"):
            versions = [
                {row["version"] for row in await db.execute_all("SELECT version FROM schema_migrations")}
                for db in dbs
            ]
            prepared = await dbs[1].prepare("SELECT version FROM schema_migrations")
        assert "999_only_in_the_first" in versions[0]
        assert versions[1] == versions[0] - {"999_only_in_the_first"}
        assert prepared.query_string == f"SELECT version FROM {keyspaces[1]}.schema_migrations"
        assert [r.getMessage() for r in caplog.records if "keyspace" in r.getMessage().lower()] == []
    finally:
        for db, keyspace in zip(dbs, keyspaces, strict=True):
            if db.connected:
                await asyncio.to_thread(drop_keyspace, db, keyspace)
                await asyncio.to_thread(db.shutdown)


@pytest.mark.parametrize(
    ("cql", "expected"),
    [
        ("SELECT a, b FROM t WHERE k = ?", "SELECT a, b FROM ks.t WHERE k = ?"),
        ("SELECT COUNT(*) AS n FROM t WHERE k = ?", "SELECT COUNT(*) AS n FROM ks.t WHERE k = ?"),
        ("INSERT INTO t (a) VALUES (?) IF NOT EXISTS", "INSERT INTO ks.t (a) VALUES (?) IF NOT EXISTS"),
        ("INSERT INTO t(a) VALUES (?)", "INSERT INTO ks.t(a) VALUES (?)"),
        ("UPDATE t USING TTL ? SET a = ? WHERE k = ?", "UPDATE ks.t USING TTL ? SET a = ? WHERE k = ?"),
        ("DELETE FROM t WHERE k = ?", "DELETE FROM ks.t WHERE k = ?"),
        ("DELETE a, b FROM t WHERE k = ?", "DELETE a, b FROM ks.t WHERE k = ?"),
        ("select a\n  from t where k = ?", "select a\n  from ks.t where k = ?"),
        ("SELECT release_version FROM system.local", "SELECT release_version FROM system.local"),
        ("UPDATE other.t SET a = ? WHERE k = ?", "UPDATE other.t SET a = ? WHERE k = ?"),
        ("CREATE TABLE t (k int PRIMARY KEY)", None),  # not a statement the stores prepare
    ],
)
def test_qualified_names_the_first_table_in_the_keyspace(cql: str, expected: str | None) -> None:
    assert qualified(cql, "ks") == expected


async def test_a_datacenter_the_cluster_lacks_is_named_before_anything_is_created(
    base_settings: Settings,
) -> None:
    """CASSANDRA_REPLICATION naming a datacenter the cluster lacks: migrating says so, listing
    the cluster's, and creates no keyspace; CASSANDRA_LOCAL_DC naming one: connecting does."""
    keyspace = f"dcs_{uuid.uuid4().hex[:10]}"
    db = Database(replace(base_settings, keyspace=keyspace, replication="datacenter1:1,elsewhere:2"))
    await asyncio.to_thread(db.connect)
    try:
        assert db.datacenters() == {"datacenter1"}
        with pytest.raises(ValueError) as raised:
            await asyncio.to_thread(migrate, db, keyspace)
        assert str(raised.value) == (
            "CASSANDRA_REPLICATION (datacenter1:1,elsewhere:2) names elsewhere, which the cluster does "
            "not have: its datacenters are datacenter1"
        )
        rows = await asyncio.to_thread(
            db.session.execute,
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s",
            (keyspace,),
        )
        assert list(rows) == []
    finally:
        await asyncio.to_thread(db.shutdown)
    elsewhere = Database(replace(base_settings, local_dc="elsewhere"))
    with pytest.raises(CassandraUnavailable) as unavailable:
        await asyncio.to_thread(elsewhere.connect)
    assert "CASSANDRA_LOCAL_DC is 'elsewhere', but the cluster at" in str(unavailable.value)
    assert str(unavailable.value).endswith("has the datacenters datacenter1")
    assert not elsewhere.connected


async def test_network_topology_replication_in_the_local_datacenter(base_settings: Settings) -> None:
    keyspace = f"nts_{uuid.uuid4().hex[:10]}"
    settings = replace(base_settings, keyspace=keyspace, replication="datacenter1:1", local_dc="datacenter1")
    db = Database(settings.validate())
    await asyncio.to_thread(db.connect)
    try:
        await asyncio.to_thread(migrate, db, keyspace)
        row = (
            await asyncio.to_thread(
                db.session.execute,
                "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s",
                (keyspace,),
            )
        ).one()
        assert row["replication"] == {
            "class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
            "datacenter1": "1",
        }
        await db.execute("INSERT INTO schema_migrations (version, checksum) VALUES (?, ?)", ("999_x", "x"))
        assert (await db.execute("SELECT checksum FROM schema_migrations WHERE version = ?", ("999_x",))).rows
    finally:
        await asyncio.to_thread(drop_keyspace, db, keyspace)
        await asyncio.to_thread(db.shutdown)
