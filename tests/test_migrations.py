"""``gateway migrate``: pending files applied once, in order; running again changes nothing."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace

from gateway.db.migrations import drop_keyspace, load_migrations, migrate, split_statements
from gateway.db.session import Database
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
