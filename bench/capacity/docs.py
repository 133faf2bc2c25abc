"""The data-model docs' column of partition sizes, generated from the model.

Every table of the docs whose header starts ``| table |`` (``docs/data-model/*.md``, and the
shared tables of ``docs/README.md``) carries :data:`COLUMN` last; each row naming a table of
``cql/*.cql`` first holds :func:`bench.capacity.partitions.cell` of that table's largest
partition under the shipped workload. ``scripts/capacity partitions --write-docs`` rewrites the
column; ``tests/unit/test_bench_capacity.py`` fails when it drifts.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.capacity.partitions import Partition, cell

ROOT = Path(__file__).resolve().parents[2]
COLUMN = "largest partition at eBuddy scale ([capacity](CAPACITY#partition-sizes))"


def pages() -> list[Path]:
    return [*sorted((ROOT / "docs" / "data-model").glob("*.md")), ROOT / "docs" / "README.md"]


def _column(page: Path) -> str:
    target = "../capacity.md" if page.parent.name == "data-model" else "capacity.md"
    return COLUMN.replace("CAPACITY", target)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _join(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table_of(line: str) -> str | None:
    """The table a docs row is about: the first backticked name of its first cell."""
    found = re.match(r"`(\w+)`", _cells(line)[0])
    return found[1] if found else None


def rewrite(text: str, column: str, sizes: dict[str, Partition]) -> str:
    """``text`` with the column set on every table of tables (added where missing)."""
    out: list[str] = []
    lines = text.split("\n")
    in_table = has_column = False
    for line in lines:
        if line.startswith("| table |") or line.startswith("| table|"):
            in_table = True
            cells = _cells(line)
            has_column = cells[-1].startswith("largest partition")
            out.append(_join([*cells[:-1], column] if has_column else [*cells, column]))
            continue
        if in_table and line.startswith("|"):
            cells = _cells(line)
            if set("".join(cells)) <= set("-: "):
                out.append("|" + "---|" * (len(cells) + (0 if has_column else 1)))
                continue
            name = table_of(line)
            value = cell(sizes[name]) if name in sizes else ""
            out.append(_join([*cells[:-1], value] if has_column else [*cells, value]))
            continue
        in_table = False
        out.append(line)
    return "\n".join(out)


def documented(sizes: dict[str, Partition]) -> dict[str, tuple[Path, str]]:
    """Table -> (page, the cell the docs hold now) for every table row of the docs."""
    found: dict[str, tuple[Path, str]] = {}
    for page in pages():
        in_table = False
        for line in page.read_text().split("\n"):
            if line.startswith("| table |"):
                in_table = _cells(line)[-1] == _column(page)
                continue
            if in_table and line.startswith("|"):
                name = table_of(line)
                if name in sizes:
                    found[name] = (page, _cells(line)[-1])
                continue
            in_table = False
    return found


def write(sizes: dict[str, Partition]) -> list[Path]:
    changed = []
    for page in pages():
        text = page.read_text()
        new = rewrite(text, _column(page), sizes)
        if new != text:
            page.write_text(new)
            changed.append(page)
    return changed
