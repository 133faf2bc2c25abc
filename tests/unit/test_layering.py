"""The layering rules of the code layout, checked on the import graph of ``gateway/``.

Every ``import`` and ``from ... import`` counts, wherever it is written (module
level, inside a function, under ``TYPE_CHECKING``), and so does the module
named by a ``strawberry.lazy("...")`` reference: a lazy type is an import that
happens later. The rules are data (``LAYERS`` and ``_rules``): who may import whom, by
module prefix; domains are discovered as the packages under ``gateway/``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "gateway"
#: Module names (last part) of the domain layer under the GraphQL adapters; ``*_store`` counts as ``store``.
DOMAIN_LOGIC = ("store", "rules", "service")
GRAPHQL = ("strawberry", "graphql", "gateway.graph.errors")


@dataclass(frozen=True)
class Layer:
    """A shared layer: which of the project's modules its modules may import (besides
    their own layer's), and which libraries they may not."""

    name: str
    may_import: tuple[str, ...]
    why: str
    libraries_forbidden: tuple[str, ...] = ()


#: The shared layers, bottom up; every package under ``gateway/`` not named here is a domain.
LAYERS = (
    Layer("gateway.errors", (), "the errors every layer raises sit below them all"),
    Layer("gateway.tasks", (), "asyncio helpers every layer uses sit below them all"),
    Layer("gateway.settings", (), "configuration is read before anything else exists"),
    Layer(
        "gateway.tracing",
        ("gateway.settings",),
        "the request's id and trace context, which every layer's logs and spans carry, sit below them all",
        ("strawberry", "graphql", "aiohttp", "cassandra", "redis"),
    ),
    Layer(
        "gateway.db",
        ("gateway.settings", "gateway.errors", "gateway.tasks", "gateway.tracing"),
        "the Cassandra side knows nothing of GraphQL, HTTP or the broker",
        ("strawberry", "graphql", "aiohttp", "redis"),
    ),
    Layer(
        "gateway.broker",
        ("gateway.settings", "gateway.errors", "gateway.tasks", "gateway.tracing"),
        "the broker only fans out: it knows no GraphQL, HTTP or Cassandra",
        ("strawberry", "graphql", "aiohttp", "cassandra"),
    ),
    Layer(
        "gateway.ratelimit",
        ("gateway.settings", "gateway.errors"),
        "token buckets know nothing of what they limit",
        ("strawberry", "graphql", "aiohttp", "cassandra"),
    ),
    Layer(
        "gateway.graph",
        (
            "gateway.db",
            "gateway.broker.pubsub",
            "gateway.broker.sessions",
            "gateway.ratelimit",
            "gateway.settings",
            "gateway.errors",
            "gateway.tasks",
            "gateway.tracing",
        ),
        "GraphQL execution builds on the data layers and the broker's interface, never on HTTP",
        ("aiohttp",),
    ),
    Layer(
        "gateway.http",
        (
            "gateway.graph",
            "gateway.db",
            "gateway.broker.pubsub",
            "gateway.broker.sessions",
            "gateway.ratelimit",
            "gateway.settings",
            "gateway.errors",
            "gateway.tasks",
            "gateway.tracing",
        ),
        "HTTP serves GraphQL; it knows no domain, no process and no broker implementation",
    ),
)
#: What composes the domains into one process: they import the domains, no domain imports them.
COMPOSITION = ("gateway.schema", "gateway.composition", "gateway.seed")
#: The process and the command line, above everything.
TOP = ("gateway.server", "gateway.__main__")
#: The broker modules a domain may use: the interface it is handed, the event wire format it
#: registers its events with, the announcement of a revoked session, and the presence board's
#: interface.
BROKER_INTERFACE = (
    "gateway.broker.pubsub",
    "gateway.broker.codec",
    "gateway.broker.sessions",
    "gateway.broker.presence",
)


@dataclass(frozen=True)
class Rule:
    """Modules under ``importer`` may not import modules under any of ``forbidden``."""

    importer: str
    forbidden: tuple[str, ...]
    why: str
    #: When given, only the modules under ``importer`` with one of these names.
    names: tuple[str, ...] = ()

    def applies_to(self, module: str) -> bool:
        if not _within(module, self.importer):
            return False
        name = module.rsplit(".", 1)[-1].rsplit("_", 1)[-1]
        return not self.names or name in self.names


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted((ROOT / PACKAGE).rglob("*.py"))}


def _domains() -> list[str]:
    shared = {layer.name for layer in LAYERS} | set(TOP)
    return sorted(
        f"{PACKAGE}.{path.parent.name}"
        for path in (ROOT / PACKAGE).glob("*/__init__.py")
        if f"{PACKAGE}.{path.parent.name}" not in shared
    )


def _layer_rules() -> list[Rule]:
    """Each layer's allow-list turned into what it may not import: every other part of the project."""
    known = set(_modules())
    rules = []
    for layer in LAYERS:
        parts = {layer.name for layer in LAYERS} | set(_domains()) | set(COMPOSITION) | set(TOP)
        parts |= {m for m in known if m.startswith("gateway.broker.")}
        forbidden = tuple(
            sorted(
                part
                for part in parts
                if not _within(part, layer.name)
                and not any(_within(part, allowed) or _within(allowed, part) for allowed in layer.may_import)
            )
        )
        rules.append(Rule(layer.name, forbidden + layer.libraries_forbidden, layer.why))
    return rules


def _rules() -> list[Rule]:
    domains = _domains()
    rules = _layer_rules()
    rules.append(
        Rule(
            f"{PACKAGE}.users",
            tuple(d for d in domains if d != f"{PACKAGE}.users"),
            "every domain may build on users/, so users/ builds on no other domain",
        )
    )
    implementations = tuple(
        module
        for module in _modules()
        if module.startswith("gateway.broker.") and module not in BROKER_INTERFACE
    )
    rules.extend(
        Rule(
            domain,
            (*COMPOSITION, *TOP, *implementations),
            "domains are joined at the composition root, nothing reaches back into it, and they "
            "reach the broker only through the interface they are handed",
        )
        for domain in domains
    )
    rules.append(
        Rule(
            "gateway.server",
            (*domains, "gateway.schema", "gateway.seed"),
            "the process runs what the composition root hands it and knows no domain",
        )
    )
    rules.append(
        Rule(
            PACKAGE,
            GRAPHQL,
            "stores, rules and services raise gateway.errors and know nothing of GraphQL",
            names=DOMAIN_LOGIC,
        )
    )
    return rules


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _is_lazy_call(node: ast.Call) -> bool:
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "lazy") or (
        isinstance(func, ast.Name) and func.id == "lazy"
    )


def _imports(module: str, path: Path, known: set[str]) -> Iterator[str]:
    """Every module that ``module`` imports, resolved to the most specific known module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield submodule if submodule in known else target
        elif isinstance(node, ast.Call) and _is_lazy_call(node):
            for arg in node.args[:1]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield arg.value


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {module: set(_imports(module, path, known)) for module, path in modules.items()}


def test_rules_by_name_match_those_modules_only() -> None:
    rule = Rule(PACKAGE, GRAPHQL, "", names=DOMAIN_LOGIC)
    assert rule.applies_to("gateway.blog.comment_store")
    assert rule.applies_to("gateway.rooms.service")
    assert not rule.applies_to("gateway.rooms.schema")


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = _graph()
    assert len(graph) > 50
    assert {"gateway.db.session"} <= graph["gateway.server.app"]
    assert any(target.startswith("strawberry") for target in graph["gateway.graph.context"])


def test_every_package_is_a_layer_a_domain_or_the_top() -> None:
    domains = _domains()
    assert {"gateway.users", "gateway.messenger", "gateway.rooms"} <= set(domains)
    assert not {"gateway.db", "gateway.broker", "gateway.server"} & set(domains)


def test_a_layer_rule_forbids_what_its_allow_list_leaves_out() -> None:
    rules = {rule.importer: rule for rule in _layer_rules()}
    graph_rule = rules["gateway.graph"]
    assert "gateway.http" in graph_rule.forbidden
    assert "gateway.broker.redis_pubsub" in graph_rule.forbidden
    assert "gateway.broker.pubsub" not in graph_rule.forbidden
    assert "gateway.db" not in graph_rule.forbidden
    assert "gateway.rooms" in rules["gateway.http"].forbidden


@pytest.mark.parametrize("rule", _rules(), ids=lambda rule: "/".join((rule.importer, *rule.names)))
def test_lower_layers_never_import_higher_ones(rule: Rule) -> None:
    graph = _graph()
    broken = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if rule.applies_to(module)
        for target in targets
        if any(_within(target, forbidden) for forbidden in rule.forbidden)
    )
    assert not broken, f"{rule.why}:\n" + "\n".join(broken)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (or a module importing itself), by Tarjan."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycle_detection_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)
