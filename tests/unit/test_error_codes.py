"""``enum ErrorCode`` holds exactly the codes the gateway can put in ``extensions.code``.

The codes are set in a few shapes across ``gateway/`` (the domain errors' table in
``graph/errors.py``, ``{"code": ...}`` literals in the GraphQL and HTTP layers, the
HTTP refusals' ``code`` parameter). :func:`produced_codes` reads every module's
syntax tree for those shapes, so a new code written anywhere fails
:func:`test_the_enum_is_every_code_the_gateway_sets` until the enum lists it, and
an enum value nothing sets fails it too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from gateway.graph.errors import CODES, ErrorCode
from gateway.schema import build_schema

GATEWAY = Path(__file__).resolve().parents[2] / "gateway"

#: What an error code looks like; other strings in a code's place (a WebSocket close
#: code is an int) are not codes.
CODE_SHAPE = re.compile(r"[A-Z][A-Z_]*[A-Z]")


def _strings(node: ast.AST | None) -> Iterator[str]:
    """The string constants within ``node`` (a literal, either arm of a conditional ...)."""
    if node is None:
        return
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            yield inner.value


def _code_parameters(trees: Iterable[ast.AST]) -> dict[str, int]:
    """Callables with a parameter named ``code``: name -> its position among the arguments
    a caller passes (a class by its ``__init__``, without ``self``)."""
    found: dict[str, int] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                        names = [a.arg for a in item.args.posonlyargs + item.args.args][1:]
                        if "code" in names:
                            found[node.name] = names.index("code")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [a.arg for a in node.args.posonlyargs + node.args.args]
                if names[:1] in (["self"], ["cls"]):
                    names = names[1:]
                if "code" in names:
                    found[node.name] = names.index("code")
    return found


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _is_code_target(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return target.id == "code"
    if isinstance(target, ast.Attribute):
        return target.attr == "code"
    if isinstance(target, ast.Subscript):
        key = target.slice
        return isinstance(key, ast.Constant) and key.value == "code"
    return False


def produced_codes(sources: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Every code set in ``sources`` ((name, Python source) pairs) -> where it is set.

    A code is set by a ``{"code": <value>}`` display, a ``code=<value>`` keyword, the
    default of a parameter named ``code``, a call passing ``<value>`` in the place of a
    ``code`` parameter, an assignment to ``code`` (a name, an attribute or a ``["code"]``
    item) or a ``CODES`` table's values; ``<value>`` may be a literal or a conditional
    of literals."""
    trees = {name: ast.parse(source, name) for name, source in sources}
    positions = _code_parameters(trees.values())
    found: dict[str, set[str]] = {}

    def add(values: Iterable[str], where: str) -> None:
        for value in values:
            if CODE_SHAPE.fullmatch(value):
                found.setdefault(value, set()).add(where)

    for name, tree in trees.items():
        for node in ast.walk(tree):
            where = f"{name}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "code":
                        add(_strings(value), where)
            elif isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg == "code":
                        add(_strings(keyword.value), where)
                index = positions.get(_called_name(node) or "")
                if index is not None and index < len(node.args):
                    add(_strings(node.args[index]), where)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = node.args.posonlyargs + node.args.args
                defaults = node.args.defaults
                for argument, default in zip(
                    arguments[len(arguments) - len(defaults) :], defaults, strict=True
                ):
                    if argument.arg == "code":
                        add(_strings(default), where)
                for argument, kw_default in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True):
                    if argument.arg == "code":
                        add(_strings(kw_default), where)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_is_code_target(t) for t in targets):
                    add(_strings(node.value), where)
                if any(isinstance(t, ast.Name) and t.id == "CODES" for t in targets):
                    if isinstance(node.value, ast.Dict):
                        add((v for value in node.value.values for v in _strings(value)), where)
    return found


def gateway_sources() -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(GATEWAY.parent)), path.read_text()) for path in sorted(GATEWAY.rglob("*.py"))
    ]


def test_the_enum_is_every_code_the_gateway_sets() -> None:
    produced = produced_codes(gateway_sources())
    listed = {code.name for code in ErrorCode}
    unlisted = {code: sorted(places) for code, places in produced.items() if code not in listed}
    assert not unlisted, (
        f"codes set in gateway/ but missing from ErrorCode (gateway/graph/errors.py): {unlisted}"
    )
    assert listed <= set(produced), f"ErrorCode values nothing sets: {sorted(listed - set(produced))}"
    # The domain errors' table is read too (its values are what most errors carry).
    assert set(CODES.values()) <= listed


def test_the_schema_carries_the_enum_with_every_value_described() -> None:
    """The SDL (and so the code clients generate from it) has ``enum ErrorCode``."""
    schema = build_schema()
    enum = schema._schema.type_map["ErrorCode"]
    assert set(enum.values) == {code.name for code in ErrorCode}  # type: ignore[attr-defined]
    assert all(enum.values[code.name].value == code.name for code in ErrorCode)  # type: ignore[attr-defined]
    assert enum.description
    assert all(value.description for value in enum.values.values())  # type: ignore[attr-defined]
    assert "enum ErrorCode {" in schema.as_str()


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ('GraphQLError("m", extensions={"code": "NEW_ONE"})', "NEW_ONE"),
        ('extensions = {"code": "A_ONE" if hard else "B_ONE"}', "B_ONE"),
        ('extensions["code"] = "NEW_ONE"', "NEW_ONE"),
        ('code = "NEW_ONE" if tokens else "OTHER"', "NEW_ONE"),
        ("class Refused:\n    def __init__(self, status, reason, code='NEW_ONE'):\n        pass", "NEW_ONE"),
        (
            "class Refused:\n    def __init__(self, status, reason, code='BAD_REQUEST'):\n        pass\n"
            "raise Refused(400, 'm', 'NEW_ONE')",
            "NEW_ONE",
        ),
        ("def _error(message, code):\n    pass\n_error('m', 'NEW_ONE')", "NEW_ONE"),
        ("refuse(message='m', code='NEW_ONE')", "NEW_ONE"),
        ("CODES = {BadUserInput: 'NEW_ONE'}", "NEW_ONE"),
    ],
)
def test_each_way_of_setting_a_code_is_found(source: str, code: str) -> None:
    assert code in produced_codes([("example.py", source)])


def test_strings_in_other_places_are_not_codes() -> None:
    source = 'log.warning("NOT_A_CODE")\nclose(code=4403, reason="GONE_AWAY")\nlimit = {"name": "SIGN_IN"}'
    assert produced_codes([("example.py", source)]) == {}
