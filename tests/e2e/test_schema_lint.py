"""The checked-in schema passes graphql-schema-linter (its rules as schema/ configures them)."""

from __future__ import annotations

from pathlib import Path

from tests.support.schema_tools import SCHEMA, lint


def test_schema_graphql_has_no_lint_finding() -> None:
    findings = lint(SCHEMA)
    shown = [f"{f['location']['line']}: {f['message']} ({f['rule']})" for f in findings]
    assert not findings, f"{len(findings)} findings in schema.graphql:\n" + "\n".join(shown)


def test_the_linter_reports_what_it_checks(tmp_path: Path) -> None:
    """The run above can fail: a field, an argument and a type without a description,
    and a second unused type, are each found."""
    bad = tmp_path / "bad.graphql"
    bad.write_text(
        SCHEMA.read_text()
        + '\ntype Unused {\n  """Described."""\n  ok: String\n  bare(arg: Int): String\n}\n'
    )
    rules = {finding["rule"] for finding in lint(bad)}
    assert {
        "types-have-descriptions",
        "fields-have-descriptions",
        "arguments-have-descriptions",
        "defined-types-are-used",
    } <= rules
