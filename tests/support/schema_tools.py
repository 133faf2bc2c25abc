"""The schema's tools from tests/js (graphql-schema-linter, graphql-inspector), run on files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "tests" / "js"
SCHEMA = ROOT / "schema.graphql"
#: The schema's changelog, its released versions and the linter's configuration.
SCHEMA_DIR = ROOT / "schema"
CHANGELOG = SCHEMA_DIR / "CHANGELOG.md"
RELEASES = SCHEMA_DIR / "releases"
CHANGES_CHECK = JS / "schema-changelog.cjs"


def run_tool(tool: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``tests/js/node_modules/.bin/<tool> <args>`` under Node, from tests/js."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node (v20 or newer) is not on PATH: the schema's tools run in Node")
    script = JS / "node_modules" / ".bin" / tool
    if not script.exists():
        pytest.fail("tests/js has no node_modules: run the suite with scripts/test, which runs npm ci there")
    return subprocess.run(
        [node, str(script), *args],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )


def lint(schema: Path) -> list[dict[str, Any]]:
    """graphql-schema-linter's findings on ``schema``, with the configuration in schema/."""
    done = run_tool(
        "graphql-schema-linter", "--config-directory", str(SCHEMA_DIR), "--format", "json", str(schema)
    )
    assert done.returncode in (0, 1), done.stderr
    findings: list[dict[str, Any]] = json.loads(done.stdout)["errors"]
    return findings


def released() -> list[Path]:
    """The released schemas, oldest first (``v1.graphql``, ``v2.graphql`` ...)."""
    return sorted(RELEASES.glob("v*.graphql"), key=lambda path: int(path.stem[1:]))


def breaking_changes(
    old: Path, new: Path, version: str | None = None, changelog: Path = CHANGELOG
) -> tuple[int, dict[str, Any]]:
    """``graphql-inspector diff old new`` with the changelog check: its exit status and its
    report (the breaking changes, each ``listed`` or not in ``version``'s section)."""
    env = {"SCHEMA_CHANGELOG": str(changelog)}
    if version is not None:
        env["SCHEMA_VERSION"] = version
    done = run_tool(
        "graphql-inspector",
        "diff",
        str(old),
        str(new),
        "--rule",
        "verboseChanges",
        "--onComplete",
        str(CHANGES_CHECK),
        env=env,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("schema-changes ")]
    if not lines:
        # No change at all: graphql-inspector ends before calling the handler.
        assert done.returncode == 0 and "No changes detected" in done.stdout, done.stdout + done.stderr
        return 0, {"breaking": [], "unlisted": []}
    report: dict[str, Any] = json.loads(lines[-1].removeprefix("schema-changes "))
    return done.returncode, report
