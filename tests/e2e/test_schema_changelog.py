"""Breaking changes are listed: graphql-inspector ``diff`` of each released schema against the
next (and of the last release against schema.graphql) finds none that schema/CHANGELOG.md does
not list under that version's "### Breaking"."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path

from graphql import ObjectTypeDefinitionNode, parse, print_ast

from tests.support.schema_tools import CHANGELOG, SCHEMA, breaking_changes, released


def versions() -> list[str]:
    """The changelog's versions, newest first."""
    return re.findall(r"^## (v\d+)\b", CHANGELOG.read_text(), flags=re.MULTILINE)


def test_every_release_is_kept_and_the_next_version_is_on_top() -> None:
    kept = [path.stem for path in released()]
    assert kept, "no released schema in schema/releases"
    assert kept == [f"v{n}" for n in range(1, len(kept) + 1)]
    assert versions() == [f"v{n}" for n in range(len(kept) + 1, 0, -1)]


def test_each_release_lists_its_breaking_changes() -> None:
    kept = released()
    for old, new in itertools.pairwise(kept):
        status, report = breaking_changes(old, new, new.stem)
        assert status == 0 and not report["unlisted"], report


def test_schema_graphql_lists_its_breaking_changes_since_the_last_release() -> None:
    last = released()[-1]
    status, report = breaking_changes(last, SCHEMA)
    assert report.get("version", versions()[0]) == versions()[0]
    assert status == 0 and not report["unlisted"], report


def _without_field(type_name: str, field: str, into: Path) -> Path:
    """A copy of schema.graphql, written to ``into``, whose ``type_name`` lacks ``field``."""
    document = parse(SCHEMA.read_text())
    definitions = []
    for definition in document.definitions:
        if isinstance(definition, ObjectTypeDefinitionNode) and definition.name.value == type_name:
            fields = definition.fields or ()
            kept = tuple(f for f in fields if f.name.value != field)
            assert len(kept) == len(fields) - 1
            definition = replace(definition, fields=kept)
        definitions.append(definition)
    into.write_text(print_ast(replace(document, definitions=tuple(definitions))))
    return into


def test_an_unlisted_breaking_change_fails_the_check(tmp_path: Path) -> None:
    changed = _without_field("Room", "banner", tmp_path / "schema.graphql")
    status, report = breaking_changes(released()[-1], changed)
    assert status == 1
    assert [change["path"] for change in report["unlisted"]] == ["Room.banner"]


def test_a_breaking_change_listed_in_the_changelog_passes(tmp_path: Path) -> None:
    changed = _without_field("Room", "banner", tmp_path / "schema.graphql")
    text = CHANGELOG.read_text()
    top = versions()[0]
    heading = re.search(rf"^## {top}\b.*$", text, flags=re.MULTILINE)
    assert heading is not None
    breaking = text.index("### Breaking", heading.end())
    line_end = text.index("\n", breaking)
    listed = text[: line_end + 1] + "\n- `Room.banner` is gone.\n" + text[line_end + 1 :]
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text(listed)
    status, report = breaking_changes(released()[-1], changed, changelog=changelog)
    assert status == 0 and not report["unlisted"], report
    assert any(change["path"] == "Room.banner" and change["listed"] for change in report["breaking"])
