"""Every CQL statement of the gateway reads one partition, boundedly, and writes by full key.

The statements are found in the source (``tests/support/cql_audit.py`` says how and why),
so a statement added anywhere under ``gateway/`` is audited without being listed
here. The keys come from the live schema of the test keyspace. ``pytest -s``
prints the table of statements; it is also written to ``cql-audit.txt`` in the
test's temporary directory.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from gateway.server.app import SERVICES
from tests.support.client import Api
from tests.support.cql_audit import RANGE_SCANS, TableKeys, Unauditable, audit, collect, parse, table


async def _schema(app: web.Application) -> dict[str, TableKeys]:
    db = app[SERVICES].db
    rows = await db.execute_all(
        "SELECT table_name, column_name, kind, position FROM system_schema.columns WHERE keyspace_name = ?",
        (db.keyspace,),
    )
    keys: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for row in rows:
        kinds = keys.setdefault(row["table_name"], {"partition_key": [], "clustering": []})
        if row["kind"] in kinds:
            kinds[row["kind"]].append((row["position"], row["column_name"]))
    return {
        name: TableKeys(
            tuple(c for _, c in sorted(kinds["partition_key"])),
            tuple(c for _, c in sorted(kinds["clustering"])),
        )
        for name, kinds in keys.items()
    }


async def test_every_statement_is_bounded_and_keyed(
    server: tuple[Api, web.Application], tmp_path: Path
) -> None:
    _, app = server
    schema = await _schema(app)
    found = collect()
    verdicts = [audit(item, schema) for item in found]
    report = table(verdicts)
    print("\n" + report)
    (tmp_path / "cql-audit.txt").write_text(report + "\n")
    failing = [v for v in verdicts if v.problems]
    assert not failing, "statements that break the rules:\n" + table(failing)


async def test_the_audit_sees_the_statements_of_every_store(server: tuple[Api, web.Application]) -> None:
    """The collection is not vacuous: it reaches every store, including the texts
    the bucketed timelines build in their constructors. (Tables kept only for older
    gateways, which no statement touches any more, may exist.)"""
    _, app = server
    schema = await _schema(app)
    tables: set[str] = set()
    for item in collect():
        try:
            tables.add(parse(item.text).table)
        except Unauditable:
            continue
    assert len(tables) >= len(schema) - 3, sorted(set(schema) - tables)
    stores = {"users", "sessions", "rooms", "room_participants", "talk_partners", "contact_books", "emails"}
    assert stores <= tables
    assert {"direct_message_buckets", "post_buckets_by_tag", "email_folder_buckets"} <= tables
    assert [scan.table for scan in RANGE_SCANS] == ["rooms"]
