"""Runs the Node scripts of tests/js against the running gateway and reads their JSON reports."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

JS = Path(__file__).resolve().parents[1] / "js"


async def run_node(script: str, *args: str, needs: str, seconds: float = 180) -> Any:
    """``node tests/js/<script> <args>``; its stdout parsed as JSON. ``needs`` is a package
    the script imports: without it, tests/js was not installed (``scripts/test`` does that)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node (v20 or newer) is not on PATH: the client tests run in Node")
    if not (JS / "node_modules" / needs).is_dir():
        pytest.fail("tests/js has no node_modules: run the suite with scripts/test, which runs npm ci there")
    process = await asyncio.create_subprocess_exec(
        node,
        str(JS / script),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=JS,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=seconds)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, stderr.decode()
    return json.loads(stdout)
