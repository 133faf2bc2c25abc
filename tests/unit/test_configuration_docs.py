"""docs/configuration.md is what the declarations generate, so it cannot drift from the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.__main__ import main
from gateway.settings import Settings
from gateway.settings.declare import declared
from gateway.settings.reference import configuration_reference
from gateway.settings.tooling import ToolingSettings

ROOT = Path(__file__).resolve().parents[2]


def test_the_checked_in_reference_is_the_generated_one() -> None:
    checked_in = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert checked_in == configuration_reference(), (
        "docs/configuration.md is out of date: python -m gateway settings --markdown > docs/configuration.md"
    )


def test_the_reference_lists_every_variable_and_alias() -> None:
    reference = configuration_reference()
    for cls in (Settings, ToolingSettings):
        for _, spec in declared(cls):
            assert reference.count(f"| `{spec.variable}` |") == 1, spec.variable
            for alias in spec.aliases:
                assert f"`{alias}`" in reference, alias


def test_the_readme_points_at_the_reference() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    assert "(docs/configuration.md)" in section
    assert "| variable |" not in section


def test_the_command_prints_the_reference_whatever_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GATEWAY_PORT", "not a port")
    assert main(["settings", "--markdown"]) == 0
    assert capsys.readouterr().out == configuration_reference()
