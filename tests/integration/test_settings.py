"""Settings that only a real node can prove reach the statements (the rest: tests/unit/test_settings_*.py)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from gateway.db.session import CassandraUnavailable, Database
from gateway.settings import Settings


async def test_statements_are_sent_at_the_configured_consistency(
    base_settings: Settings, server: object
) -> None:
    """TWO replicas cannot answer on the test keyspace's one: the setting reaches the statements."""
    points = base_settings.contact_points or ("127.0.0.1",)
    for level, answers in (("TWO", False), ("ONE", True)):
        db = Database(replace(base_settings, contact_points=points, consistency=level))
        await asyncio.to_thread(db.connect)
        db.use_keyspace(base_settings.keyspace)
        try:
            if answers:
                await db.execute("SELECT login FROM users WHERE login = ?", ("nobody-at-all",))
            else:
                with pytest.raises(CassandraUnavailable):
                    await db.execute("SELECT login FROM users WHERE login = ?", ("nobody-at-all",))
        finally:
            await asyncio.to_thread(db.shutdown)
