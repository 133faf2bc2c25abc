"""The test tree's own rules, read from the files under ``tests/``.

Every test module sits in a tier: ``tests/unit/`` (nothing running), ``tests/integration/``
(Cassandra, Redis, gateways) or ``tests/e2e/`` (real client libraries and browsers). What
several modules share lives in ``tests/support/``: no module under ``tests/`` imports a test
module, so a test can move or be deleted without breaking another, and nothing there imports
from ``bench/`` but the benchmarks' own tests. Every ``import`` counts, wherever it is written
(module level, inside a function, under ``TYPE_CHECKING``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
#: The tiers a test module may sit in, each a folder of ``tests/``.
TIERS = ("unit", "integration", "e2e")
#: Test modules whose subject is the benchmarks' own code (``bench/``), which they import to test.
BENCH_TESTS_PREFIX = "test_bench_"


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "node_modules" not in p.parts and "js" not in p.parts)


def _name_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported(source: str, module: str) -> set[str]:
    """Every module ``source`` (the text of ``module``) imports, and each name it imports
    from a package (``from tests.integration import test_rooms`` names ``tests.integration.test_rooms``)."""
    found: set[str] = set()
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def problems(source: str, module: str) -> list[str]:
    """What the module named ``module`` imports against the rules."""
    test_modules: set[str] = set()
    bench: set[str] = set()
    own = module.rsplit(".", 1)[-1]
    for name in imported(source, module):
        parts = name.split(".")
        tests = [i for i, part in enumerate(parts) if part.startswith("test_")]
        if parts[0] == "tests" and tests:
            test_modules.add(".".join(parts[: tests[0] + 1]))
        if parts[0] == "bench" and not own.startswith(BENCH_TESTS_PREFIX):
            bench.add(parts[0] if len(parts) == 1 else ".".join(parts[:2]))
    return [
        *(
            f"{module} imports the test module {name}: move what it needs to tests/support"
            for name in sorted(test_modules)
        ),
        *(
            f"{module} imports {name} from bench/: take it from tests/support or gateway"
            for name in sorted(bench)
        ),
    ]


def test_no_module_imports_a_test_module_or_bench() -> None:
    found = [problem for path in _modules() for problem in problems(path.read_text(), _name_of(path))]
    assert not found, "\n".join(found)


def test_every_test_module_sits_in_a_tier() -> None:
    loose = [
        str(path.relative_to(ROOT))
        for path in _modules()
        if path.name.startswith("test_") and path.relative_to(TESTS).parts[0] not in TIERS
    ]
    assert not loose, f"test modules outside tests/{{{','.join(TIERS)}}}/: {loose}"


def test_every_tier_and_support_is_a_package() -> None:
    for folder in (*TIERS, "support"):
        assert (TESTS / folder / "__init__.py").is_file(), folder


@pytest.mark.parametrize(
    ("source", "module", "expected"),
    [
        ("from tests.integration.test_rooms import JOIN", "tests.integration.test_x", 1),
        ("import tests.e2e.test_web_client", "tests.integration.test_x", 1),
        ("def f():\n    from tests.integration import test_rooms", "tests.integration.test_x", 1),
        ("from .test_rooms import JOIN", "tests.integration.test_x", 1),
        ("from bench.bench_blog import FRONT_PAGE", "tests.integration.test_limits", 1),
        ("from bench.harness import Stats", "tests.unit.test_bench_harness", 0),
        ("from tests.support.rooms import JOIN, create_room", "tests.integration.test_x", 0),
        ("from tests.conftest import ServerFactory", "tests.integration.test_x", 0),
        ("from tests.support.rooms import JOIN", "tests.support.presence", 0),
        ("from tests.integration.test_rooms import JOIN", "tests.support.presence", 1),
    ],
)
def test_the_rules_see_every_kind_of_import(source: str, module: str, expected: int) -> None:
    assert len(problems(source, module)) == expected, problems(source, module)
