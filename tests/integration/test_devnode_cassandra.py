"""The local Cassandra node is found and reused through ``devnode``; the gateway itself never loads it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from devnode.cassandra import CASSANDRA_VERSION, CassandraNode
from gateway.settings import Settings
from gateway.settings.tooling import ToolingSettings
from tests.support.cli import run_cli


@pytest.fixture
def embedded(base_settings: Settings) -> Settings:
    if not base_settings.embedded:
        pytest.skip("CASSANDRA_CONTACT_POINTS names a cluster; no local node to inspect")
    return base_settings


def test_start_reuses_the_running_node(embedded: Settings, tooling: ToolingSettings) -> None:
    lines: list[str] = []
    node = CassandraNode(tooling, embedded.cassandra_port, progress=lines.append)
    before = node.status()
    assert before.running and before.cql_ready and before.pid is not None

    node.start()
    where = f"CQL on 127.0.0.1:{embedded.cassandra_port}"
    assert lines == [f"Cassandra {CASSANDRA_VERSION} already running (pid {before.pid}, {where})"]
    assert node.status().pid == before.pid


async def test_cli_status_reports_the_running_node(embedded: Settings, tooling: ToolingSettings) -> None:
    pid = CassandraNode(tooling, embedded.cassandra_port).status().pid
    code, out = await run_cli(embedded, "cassandra", "status")
    assert code == 0, out
    assert f"Cassandra {CASSANDRA_VERSION}: running (pid {pid}), CQL port ready" in out


def test_the_running_gateway_does_not_import_devnode() -> None:
    """Nor the tooling's settings: where a local node lives is no concern of a served gateway."""
    probe = (
        "import sys, gateway.server.app, gateway.schema, gateway.__main__; "
        "print(sorted(m for m in sys.modules "
        "if m.split('.')[0] == 'devnode' or m == 'gateway.settings.tooling'))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
