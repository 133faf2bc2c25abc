"""The upstream fences hold: every internal of cassandra-driver, graphql-core and Strawberry
that the gateway uses is where the fence modules say, and nothing else reaches past them.

``gateway/db/driver_internals.py``, ``gateway/graph/executor_internals.py`` and
``gateway/server/aiohttp_internals.py`` each export
``REACHES``, ``(owner, name, expectation)`` for everything they use, and ``PINNED``, the
versions they were checked against. Each reach is one test case here, named by the reach,
so an upgrade that moves an internal fails in seconds with what moved. Everything is read
from the installed packages (their sources, where the driver is compiled with Cython); no
database or server runs.

The scan of ``gateway/`` keeps the fences whole: outside them, no private name a fence
lists, no string it fences, no ``super()._x``, no method named for a private one it lists,
no import of a private module or of an internal a fence lists, and no ``._x`` (nor a string
``"_x"``, as ``getattr`` or ``attrgetter`` take it) naming a private name the gateway does
not define itself anywhere: such a name can only be someone else's. That last rule cannot
tell whose object an access is on: a library's private name that the gateway happens to
define too (its own ``_state`` beside a library's) passes unless a fence lists it, and a
name built at run time is not seen; the names the fences list are caught wherever they
appear in the source.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import importlib.metadata
import inspect
import pkgutil
import re
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import strawberry

from gateway.db import driver_internals
from gateway.graph import executor_internals
from gateway.server import aiohttp_internals

FENCES: tuple[ModuleType, ...] = (driver_internals, executor_internals, aiohttp_internals)
ROOT = Path(__file__).resolve().parents[2]
GATEWAY = ROOT / "gateway"
FENCE_FILES = {Path(fence.__file__ or "").resolve() for fence in FENCES}
LIBRARIES = ("cassandra", "graphql", "strawberry", "aiohttp")

Reach = tuple[object, str, str]
REACHES: list[tuple[ModuleType, Reach]] = [(fence, reach) for fence in FENCES for reach in fence.REACHES]


def _label(owner: object, name: str) -> str:
    if isinstance(owner, ModuleType):
        return f"{owner.__name__}.{name}"
    return f"{getattr(owner, '__module__', '?')}.{getattr(owner, '__qualname__', owner)}.{name}"


# -- library sources ------------------------------------------------------------------------


def _source_file(module_name: str) -> Path:
    """The ``.py`` file of a module, also where it is compiled (the driver ships both)."""
    module = sys.modules[module_name]
    path = Path(module.__file__ or "")
    if path.suffix != ".py":
        path = path.with_name(module_name.rsplit(".", 1)[-1] + ".py")
    return path


@cache
def _parsed(path: Path) -> tuple[str, ast.Module]:
    text = path.read_text(encoding="utf-8")
    return text, ast.parse(text)


def _class_node(cls: type) -> tuple[str, ast.ClassDef] | None:
    text, tree = _parsed(_source_file(cls.__module__))
    body: list[ast.stmt] = tree.body
    node: ast.ClassDef | None = None
    for part in cls.__qualname__.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return (text, node) if node is not None else None


def _library_classes(owner: type) -> Iterator[type]:
    for cls in owner.__mro__:
        if cls.__module__.split(".")[0] in LIBRARIES:
            yield cls


def _function_node(owner: object, name: str) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The definition of ``owner.name`` in the source of the class (in its MRO) or module defining it."""
    if isinstance(owner, ModuleType):
        text, tree = _parsed(_source_file(owner.__name__))
        body = tree.body
    else:
        assert isinstance(owner, type)
        defining = next((cls for cls in _library_classes(owner) if name in cls.__dict__), None)
        found = _class_node(defining) if defining is not None else None
        if found is None:
            return None
        text, node = found
        body = node.body
    for statement in body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and statement.name == name:
            return text, statement
    return None


def _own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function, without those of the functions and classes defined in it."""
    pending = list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))


def fingerprint(owner: object, name: str) -> str | None:
    """The first 12 hex digits of the SHA-256 of ``owner.name``'s source."""
    found = _function_node(owner, name)
    if found is None:
        return None
    text, node = found
    segment = ast.get_source_segment(text, node) or ""
    return hashlib.sha256(segment.encode()).hexdigest()[:12]


def _set_on_instances(owner: type, name: str) -> bool:
    if hasattr(owner, name):  # a class attribute, property or slot
        return True
    for cls in _library_classes(owner):
        if name in cls.__dict__ or name in getattr(cls, "__annotations__", {}):
            return True
        if dataclasses.is_dataclass(cls) and name in {f.name for f in dataclasses.fields(cls)}:
            return True
        found = _class_node(cls)
        if found is None:
            continue
        for node in ast.walk(found[1]):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and node.attr == name
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                return True
    return False


def _parameters(spec: str) -> tuple[list[str], bool, str]:
    match = re.fullmatch(r"\((.*?)\)(?:\s*->\s*(.+))?", spec)
    assert match is not None, f"bad expectation {spec!r}"
    names = [part.strip() for part in match.group(1).split(",") if part.strip()]
    more = bool(names) and names[-1] == "..."
    return (names[:-1] if more else names), more, (match.group(2) or "").strip()


def _callable(owner: object, name: str) -> Any:
    found = inspect.getattr_static(owner, name)
    return found.__func__ if isinstance(found, classmethod | staticmethod) else found


def problem(owner: object, name: str, spec: str) -> str | None:
    """What is wrong with ``owner.name`` against ``spec``, or None."""
    label = _label(owner, name)
    if spec == "attribute":
        return None if hasattr(owner, name) else f"{label} is gone"
    if spec == "instance attribute":
        assert isinstance(owner, type)
        return None if _set_on_instances(owner, name) else f"{label} is no longer set on instances"
    if not hasattr(owner, name):
        return f"{label} is gone"
    if spec.startswith("fields "):
        expected = [part.strip() for part in spec.removeprefix("fields ").strip("()").split(",")]
        value = getattr(owner, name)
        if dataclasses.is_dataclass(value):
            fields = [field.name for field in dataclasses.fields(value)]
        else:
            fields = list(getattr(value, "_fields", ()))
        return None if fields == expected else f"{label} has the fields {fields}, not {expected}"
    if spec.startswith("defines "):
        inner = spec.removeprefix("defines ")
        found = _function_node(owner, name)
        nested = found is not None and any(
            isinstance(node, ast.FunctionDef) and node.name == inner for node in ast.walk(found[1])
        )
        return None if nested else f"{label} no longer defines {inner}"
    if spec.startswith("source "):
        recorded = spec.removeprefix("source ")
        now = fingerprint(owner, name)
        if now == recorded:
            return None
        return f"{label} changed upstream (source {now}, not {recorded}): review the gateway's copy"
    names, more, returns = _parameters(spec)
    try:
        signature = inspect.signature(_callable(owner, name))
    except (TypeError, ValueError) as error:
        return f"{label} has no signature to check ({error})"
    actual = list(signature.parameters)
    if (actual[: len(names)] if more else actual) != names:
        return f"{label} takes ({', '.join(actual)}), not {spec}"
    if returns.endswith("-tuple"):
        arity = int(returns.removesuffix("-tuple"))
        found = _function_node(owner, name)
        assert found is not None, f"no source for {label}"
        tuples = [
            node.value
            for node in _own_nodes(found[1])
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)
        ]
        if not tuples or any(len(value.elts) != arity for value in tuples):
            return f"{label} no longer returns {arity} items (the caller unpacks them)"
    elif returns:
        annotation = signature.return_annotation
        shown = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", annotation)
        if shown != returns:
            return f"{label} returns {shown}, not {returns}"
    return None


# -- the reaches --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owner", "name", "spec"),
    [reach for _, reach in REACHES],
    ids=[f"{_label(owner, name)}: {spec}" for _, (owner, name, spec) in REACHES],
)
def test_each_internal_is_as_the_fence_expects(owner: object, name: str, spec: str) -> None:
    assert problem(owner, name, spec) is None, problem(owner, name, spec)


def test_the_installed_versions_are_the_pinned_ones() -> None:
    pinned = [driver_internals.PINNED, *executor_internals.PINNED, *aiohttp_internals.PINNED]
    for distribution, version in pinned:
        installed = importlib.metadata.version(distribution)
        assert installed == version, (
            f"{distribution} {installed} is installed; the fences were checked against {version}. "
            "Run the tests their tables name (both ways: defaults and the reference paths), then "
            "update PINNED and any source fingerprint that changed."
        )


def test_a_changed_expectation_is_named() -> None:
    """The checks fail, and say why, when an internal is not as listed."""
    from cassandra.pool import HostConnection

    assert "is gone" in (problem(HostConnection, "lend_connection", "(self, timeout)") or "")
    assert "takes (self, timeout)" in (problem(HostConnection, "borrow_connection", "(self)") or "")
    assert "3 items" in (problem(HostConnection, "borrow_connection", "(self, timeout) -> 3-tuple") or "")
    assert "changed upstream" in (problem(HostConnection, "borrow_connection", "source 000000000000") or "")
    from graphql.execution import collect_fields

    changed = problem(collect_fields, "CollectedFields", "fields (grouped_field_set, new_defer_usages)")
    assert "has the fields" in (changed or "")


def test_a_basic_fields_resolver_has_the_name_the_executor_knows() -> None:
    """The plain-field executor recognises Strawberry's resolver for a field without one by
    its name; were it renamed, plain fields would quietly take the slow path."""

    @strawberry.type
    class Query:
        plain: int = 1

    schema = strawberry.Schema(query=Query)
    field = executor_internals.graphql_schema(schema).query_type.fields["plain"]  # type: ignore[union-attr]
    assert executor_internals.is_basic_resolver(field.resolve)
    assert executor_internals.strawberry_definition(field).python_name == "plain"


# -- nothing reaches past the fences --------------------------------------------------------------


#: A private name, or a dotted path starting with one, as ``getattr`` or ``attrgetter`` take it.
_PRIVATE_NAME = re.compile(r"_(?!_)[A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_private_names(tree: ast.Module) -> set[str]:
    """Private names a module defines: attributes it assigns, methods and class attributes,
    module-level functions, classes and variables."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__slots__" for t in node.targets):
            slots = ast.walk(node.value)
            names.update(c.value for c in slots if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return {name for name in names if _private(name)}


def gateway_files() -> list[Path]:
    return [p for p in sorted(GATEWAY.rglob("*.py")) if p.resolve() not in FENCE_FILES]


def _fenced_private_names() -> set[str]:
    return {name for _, (_, name, _) in REACHES if _private(name)} | {
        spec.removeprefix("defines ") for _, (_, _, spec) in REACHES if spec.startswith("defines ")
    }


def _fenced_imports() -> set[tuple[str, str]]:
    """Internals a fence lists by their module (not a library's top-level package, which
    exports its public API): imported only by the fence."""
    return {
        (owner.__name__, name)
        for _, (owner, name, _) in REACHES
        if isinstance(owner, ModuleType) and "." in owner.__name__
    }


def reaches_past_the_fences(path: Path, tree: ast.Module, gateway_names: set[str]) -> list[str]:
    """Where a module of the gateway uses a library's internals other than through a fence."""
    fenced = _fenced_private_names()
    literals = set(executor_internals.FENCED_LITERALS) | fenced
    imports = _fenced_imports()
    where = path.relative_to(ROOT)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and _private(node.attr):
            receiver = node.value
            if node.attr in fenced:
                found.append(f"{where}:{line}: .{node.attr} (a fenced name)")
            elif isinstance(receiver, ast.Call) and getattr(receiver.func, "id", "") == "super":
                found.append(f"{where}:{line}: super().{node.attr} (a base class's private)")
            elif node.attr not in gateway_names:
                found.append(f"{where}:{line}: .{node.attr} (a private name the gateway does not define)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text in literals:
                found.append(f"{where}:{line}: {text!r} (a fenced string)")
            elif _PRIVATE_NAME.fullmatch(text) and text.split(".")[0] not in gateway_names:
                # As getattr(x, "_y") or attrgetter("_y.z") take it.
                found.append(f"{where}:{line}: {text!r} (a private name the gateway does not define)")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in fenced:
            found.append(f"{where}:{line}: def {node.name} (overrides a fenced name)")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in LIBRARIES:
            if any(_private(part) for part in node.module.split(".")):
                found.append(f"{where}:{line}: from {node.module} (a private module)")
            for alias in node.names:
                if _private(alias.name) or (node.module, alias.name) in imports:
                    found.append(f"{where}:{line}: {alias.name} from {node.module} (import it from a fence)")
    return found


def test_nothing_outside_the_fences_reaches_into_the_libraries() -> None:
    trees = {path: _parsed(path)[1] for path in gateway_files()}
    gateway_names = set().union(*(_defined_private_names(tree) for tree in trees.values()))
    found = [
        line for path, tree in trees.items() for line in reaches_past_the_fences(path, tree, gateway_names)
    ]
    assert not found, "\n".join(found)


def test_the_scan_finds_a_reach_past_the_fences() -> None:
    """Each rule of the scan, on code that breaks it."""
    code = """
from strawberry.schema.schema import validate_document
from cassandra.connection import _ConnectionIOBuffer
def f(session, info, field):
    session._pools
    info._raw_info
    field.extensions.get("strawberry-definition")
    connection._current_frame
    getattr(connection, "_socket_writable")
class C(Base):
    def _process_segment_buffer(self):
        super()._read_frame_header()
"""
    found = reaches_past_the_fences(GATEWAY / "probe.py", ast.parse(code), set())
    for expected in (
        "validate_document from strawberry.schema.schema",
        "_ConnectionIOBuffer from cassandra.connection",
        "._pools (a fenced name)",
        "._raw_info (a fenced name)",
        "'strawberry-definition' (a fenced string)",
        "._current_frame (a private name the gateway does not define)",
        "def _process_segment_buffer",
        "super()._read_frame_header (a base class's private)",
    ):
        assert any(expected in line for line in found), (expected, found)


# -- the gateway's subclasses of fenced classes override only what the fences list --------------


def _gateway_classes() -> Iterator[type]:
    for info in pkgutil.walk_packages([str(GATEWAY)], "gateway."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__:
                yield value


def _overrides() -> Iterator[tuple[type, list[type], str]]:
    """``(gateway class, library classes, method)`` for every method a gateway class defines
    over the library classes that define it too, where the class extends one a fence names."""
    owners = {owner for _, (owner, _, _) in REACHES if isinstance(owner, type)}
    for cls in _gateway_classes():
        if Path(inspect.getfile(cls)).resolve() in FENCE_FILES:
            continue
        library_mro = [base for base in cls.__mro__ if base.__module__.split(".")[0] in LIBRARIES]
        if not owners.intersection(library_mro):
            continue
        for name, value in vars(cls).items():
            method = callable(value) or isinstance(value, classmethod | staticmethod)
            if name.startswith("__") or not method:
                continue
            defining = [base for base in library_mro if name in base.__dict__]
            if defining:
                yield cls, defining, name


def test_subclasses_of_fenced_classes_override_only_listed_methods() -> None:
    listed = {(owner, name) for _, (owner, name, _) in REACHES}
    unlisted = [
        f"{cls.__module__}.{cls.__qualname__}.{name} overrides {_label(base, name)}"
        for cls, defining, name in _overrides()
        if not any((base, name) in listed for base in cls.__mro__)
        for base in defining[:1]
    ]
    assert not unlisted, "\n".join(unlisted)
    assert any(name == "execute_fields" for _, _, name in _overrides())


@pytest.mark.parametrize(
    "hook",
    [
        executor_internals.StreamPartsHook,
        executor_internals.AnswersByClass,
        executor_internals.KnownDocuments,
    ],
)
def test_the_view_hooks_replace_what_strawberry_calls(hook: Any) -> None:
    owner, name, spec = hook.REPLACES
    assert problem(owner, name, spec) is None, problem(owner, name, spec)
