"""The GraphQL-over-HTTP audit of ``graphql-http`` (Node, tests/js) against the running gateway."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.support.client import Api

JS = Path(__file__).resolve().parents[1] / "js"


async def test_graphql_http_audit_passes_every_check(api: Api) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node (v20 or newer) is not on PATH: the GraphQL-over-HTTP audit runs in Node")
    if not (JS / "node_modules" / "graphql-http").is_dir():
        pytest.fail("tests/js has no node_modules: run the suite with scripts/test, which runs npm ci there")
    process = await asyncio.create_subprocess_exec(
        node,
        str(JS / "audit.mjs"),
        api.url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=JS,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, stderr.decode()
    results = json.loads(stdout)
    counts = Counter(result["status"] for result in results)
    print(f"graphql-http audit: {dict(counts)}")
    assert len(results) >= 60, "the audit ran fewer checks than it has"
    assert [r for r in results if r["status"] != "ok"] == []
