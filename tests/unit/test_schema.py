"""The checked-in SDL is what the code generates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_schema_graphql_matches_the_code() -> None:
    generated = subprocess.run(
        [sys.executable, "-m", "gateway", "schema"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    checked_in = (ROOT / "schema.graphql").read_text()
    assert generated == checked_in, "schema.graphql is stale: run `gateway schema > schema.graphql`"
