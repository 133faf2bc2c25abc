"""Every CQL statement text in ``gateway/``, found statically, and the rules it must keep.

Statements are collected from the source, not from a run: the stores write their
CQL inline at the call site, as module constants, or as f-strings built from
constants (``BucketedTimeline`` builds its texts once, at import, from the
arguments of a module-level instance). Reading the source finds every statement,
including those of paths no test happens to take, and needs no ordering between
tests. Each string or f-string whose text starts with a CQL verb is evaluated in
its module's namespace; one that uses a method's ``self`` is evaluated against
every instance of that class found in the modules' globals; one built in a
constructor (``BucketedTimeline.__init__``) is covered by the texts its instances
hold. What remains unresolved keeps its holes (``<?>``): a hole in a column list
or a ``SET`` clause is harmless, a hole in the table name or the ``WHERE`` clause
makes the statement unauditable, which fails it.

A statement is then parsed just enough to tell its table, its restrictions and
its bound, and checked against the live schema (:class:`TableKeys`).
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "gateway"
HOLE = "<?>"
_VERB = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|BEGIN)\s")
#: Modules whose CQL does not go through ``Database``: the migration runner keeps its
#: ledger with plain driver calls before any prepared statement exists.
NOT_PREPARED = ("gateway.db.migrations",)


@dataclass(frozen=True)
class Found:
    text: str
    module: str
    line: int
    #: The docstring of the function the statement is written in.
    doc: str = ""


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name not in NOT_PREPARED:
            yield name, path


def _is_cql(value: object) -> bool:
    return isinstance(value, str) and bool(_VERB.match(value))


def _instance_texts(namespace: dict[str, Any]) -> Iterator[tuple[Any, str]]:
    """(object, CQL text) for the strings held by instances bound to module globals."""
    for value in list(namespace.values()):
        if isinstance(value, type) or callable(value) or not hasattr(value, "__dict__"):
            continue
        if not type(value).__module__.startswith(PACKAGE):
            continue
        for attribute in vars(value).values():
            if _is_cql(attribute):
                yield value, attribute


def _template(node: ast.expr, namespace: dict[str, Any]) -> str:
    """The text of an f-string (or a ``+`` of strings) with unresolvable parts as holes."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _template(node.left, namespace) + _template(node.right, namespace)
    if isinstance(node, ast.JoinedStr):
        return "".join(_template(part, namespace) for part in node.values)
    if isinstance(node, ast.FormattedValue):
        try:
            return str(_evaluate(node.value, namespace))
        except Exception:
            return HOLE
    try:
        return str(_evaluate(node, namespace))
    except Exception:
        return HOLE


def _evaluate(node: ast.expr, namespace: dict[str, Any]) -> Any:
    """The value of an expression of our own source, in its module's namespace."""
    code = compile(ast.Expression(body=node), "<cql>", "eval")
    return eval(code, dict(namespace))


def _leftmost(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.BinOp):
        node = node.left
    return node


def _starts_like_cql(node: ast.expr) -> bool:
    first = _leftmost(node)
    if isinstance(first, ast.Constant):
        return _is_cql(first.value)
    if isinstance(first, ast.JoinedStr) and first.values:
        head = first.values[0]
        if isinstance(head, ast.Constant):
            return _is_cql(head.value)
        return True  # f"{PREFIX} ..." : decided once evaluated
    return False


def _holes_pattern(template: str) -> re.Pattern[str]:
    return re.compile(".+".join(re.escape(part) for part in template.split(HOLE)), re.S)


class _Visitor(ast.NodeVisitor):
    def __init__(self, module: str, namespace: dict[str, Any], instances: list[tuple[Any, str]]) -> None:
        self.module = module
        self.namespace = namespace
        self.instances = instances
        self.found: list[Found] = []
        self.templates: list[tuple[Found, bool]] = []
        self._class: str | None = None
        self._function: ast.FunctionDef | ast.AsyncFunctionDef | None = None

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        outer, self._class = self._class, node.name
        self.generic_visit(node)
        self._class = outer

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self._function = self._function, node
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        for statement in body:
            self.visit(statement)
        self._function = outer

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            return  # a docstring or a bare string: never executed
        self.generic_visit(node)

    def _record(self, node: ast.expr) -> None:
        doc = ast.get_docstring(self._function) or "" if self._function is not None else ""
        line = node.lineno
        try:
            value = _evaluate(node, self.namespace)
        except Exception:
            value = None
        if isinstance(value, str):
            if _is_cql(value):
                self.found.append(Found(" ".join(value.split()), self.module, line, doc))
            return
        cls = self.namespace.get(self._class) if self._class else None
        resolved = False
        if isinstance(cls, type):
            for instance in {id(i): i for i, _ in self.instances if isinstance(i, cls)}.values():
                try:
                    text = _evaluate(node, {**self.namespace, "self": instance})
                except Exception:
                    continue
                if _is_cql(text):
                    self.found.append(Found(" ".join(text.split()), self.module, line, doc))
                    resolved = True
        if not resolved:
            template = " ".join(_template(node, self.namespace).split())
            if not _is_cql(template):
                return  # not a statement (a message), or one whose start is unknown
            in_constructor = self._function is not None and self._function.name == "__init__"
            self.templates.append((Found(template, self.module, line, doc), in_constructor))

    def generic_visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Constant, ast.JoinedStr, ast.BinOp)) and _starts_like_cql(child):
                if not (isinstance(child, ast.Constant) and not isinstance(child.value, str)):
                    self._record(child)
                    continue
            self.visit(child)


def collect() -> list[Found]:
    """Every statement text of ``gateway/`` (unresolvable ones with holes)."""
    loaded: dict[str, tuple[dict[str, Any], Path]] = {}
    instances: list[tuple[Any, str]] = []
    for name, path in _modules():
        namespace = vars(importlib.import_module(name))
        loaded[name] = (namespace, path)
        instances.extend(_instance_texts(namespace))
    found: list[Found] = []
    templates: list[tuple[Found, bool]] = []
    for name, (namespace, path) in loaded.items():
        visitor = _Visitor(name, namespace, instances)
        visitor.visit(ast.parse(path.read_text(), filename=str(path)))
        found.extend(visitor.found)
        templates.extend(visitor.templates)
    held = [" ".join(text.split()) for _, text in instances]
    for template, in_constructor in templates:
        matches = [text for text in held if _holes_pattern(template.text).fullmatch(text)]
        if in_constructor and matches:
            continue  # the instances' own texts are audited (collected below)
        found.append(template)
    owners = {id(instance): type(instance).__module__ for instance, _ in instances}
    for instance, text in instances:
        found.append(Found(" ".join(text.split()), owners[id(instance)], 0, "held by an instance"))
    unique: dict[str, Found] = {}
    for item in found:
        unique.setdefault(item.text, item)
    return sorted(unique.values(), key=lambda f: (f.module, f.line, f.text))


# -- parsing ------------------------------------------------------------------------


@dataclass(frozen=True)
class Restriction:
    columns: tuple[str, ...]
    op: str  # "=", "IN", "<", "<=", ">", ">=", "token"


@dataclass
class Statement:
    text: str
    kind: str  # SELECT, INSERT, UPDATE, DELETE
    table: str
    restrictions: list[Restriction] = field(default_factory=list)
    written: tuple[str, ...] = ()  # INSERT's column list
    limit: bool = False
    allow_filtering: bool = False
    deleted_columns: bool = False  # DELETE col FROM ...: a cell delete

    def eq(self) -> set[str]:
        return {c for r in self.restrictions if r.op in {"=", "IN"} for c in r.columns}

    def ranged(self) -> set[str]:
        return {c for r in self.restrictions if r.op not in {"=", "IN"} for c in r.columns}


class Unauditable(ValueError):
    pass


_IDENT = r"[A-Za-z_][A-Za-z0-9_.]*"
_CONDITION = re.compile(
    rf"^(?:(?P<tuple>\((?:\s*{_IDENT}\s*,?)+\))|token\((?P<token>[^)]*)\)|(?P<col>{_IDENT}))"
    r"\s*(?P<op>=|<=|>=|<|>|IN)\s*(?P<value>.+)$",
    re.I,
)


def _where(clause: str) -> list[Restriction]:
    if HOLE in clause:
        raise Unauditable("its WHERE clause is built at run time")
    out = []
    for part in re.split(r"\s+AND\s+", clause.strip(), flags=re.I):
        match = _CONDITION.match(part.strip())
        if not match:
            raise Unauditable(f"cannot read the condition {part!r}")
        if match["token"] is not None:
            columns = tuple(c.strip() for c in match["token"].split(","))
            out.append(Restriction(columns, "token"))
        elif match["tuple"] is not None:
            columns = tuple(c.strip() for c in match["tuple"].strip("()").split(",") if c.strip())
            out.append(Restriction(columns, match["op"].upper()))
        else:
            out.append(Restriction((match["col"],), match["op"].upper()))
    return out


def _table(name: str) -> str:
    if HOLE in name:
        raise Unauditable("its table is chosen at run time")
    return name.split(".")[-1]


def parse(text: str) -> Statement:
    text = " ".join(text.split())
    upper = text.upper()
    if upper.startswith("SELECT "):
        match = re.match(
            rf"^SELECT (?P<cols>.+?) FROM (?P<table>{_IDENT}|{re.escape(HOLE)})"
            r"(?: WHERE (?P<where>.+?))?(?: ORDER BY (?P<order>.+?))?"
            r"(?: PER PARTITION LIMIT \S+)?(?: LIMIT (?P<limit>\S+))?(?P<af> ALLOW FILTERING)?$",
            text,
            re.I,
        )
        if not match:
            raise Unauditable("cannot read the SELECT")
        return Statement(
            text,
            "SELECT",
            _table(match["table"]),
            _where(match["where"]) if match["where"] else [],
            limit=match["limit"] is not None,
            allow_filtering=match["af"] is not None,
        )
    if upper.startswith("INSERT "):
        match = re.match(
            rf"^INSERT INTO (?P<table>{_IDENT}|{re.escape(HOLE)}) \((?P<cols>[^)]*)\)", text, re.I
        )
        if not match:
            raise Unauditable("cannot read the INSERT")
        if HOLE in match["cols"]:
            raise Unauditable("its column list is built at run time")
        written = tuple(c.strip() for c in match["cols"].split(","))
        return Statement(text, "INSERT", _table(match["table"]), written=written)
    if upper.startswith("UPDATE "):
        match = re.match(
            rf"^UPDATE (?P<table>{_IDENT}|{re.escape(HOLE)})(?: USING .+?)? SET .+? WHERE (?P<where>.+?)"
            r"(?: IF .+)?$",
            text,
            re.I,
        )
        if not match:
            raise Unauditable("cannot read the UPDATE")
        return Statement(text, "UPDATE", _table(match["table"]), _where(match["where"]))
    if upper.startswith("DELETE "):
        match = re.match(
            rf"^DELETE (?P<cols>.*?)\s*FROM (?P<table>{_IDENT}|{re.escape(HOLE)})(?: USING .+?)?"
            r" WHERE (?P<where>.+?)(?: IF .+)?$",
            text,
            re.I,
        )
        if not match:
            raise Unauditable("cannot read the DELETE")
        return Statement(
            text,
            "DELETE",
            _table(match["table"]),
            _where(match["where"]),
            deleted_columns=bool(match["cols"].strip()),
        )
    raise Unauditable("not a single SELECT, INSERT, UPDATE or DELETE")


# -- rules --------------------------------------------------------------------------


@dataclass(frozen=True)
class TableKeys:
    partition: tuple[str, ...]
    clustering: tuple[str, ...]

    @property
    def primary(self) -> tuple[str, ...]:
        return self.partition + self.clustering


@dataclass(frozen=True)
class RangeScan:
    """A documented read that walks the token ring instead of naming a partition."""

    table: str
    why: str


#: The only reads allowed to range over partitions.
RANGE_SCANS = (
    RangeScan(
        "rooms",
        "the public rooms listing (Query.rooms): a page walks the token ring from the last"
        " room's token with LIMIT ?, reading O(page) rows",
    ),
)


def is_maintenance(found: Found) -> bool:
    """Operator commands, never a request, may read whole tables or partitions: the
    ``backfill`` modules (``gateway backfill``) and functions whose docstring says they
    are for maintenance commands only (the recounts)."""
    return found.module.endswith(".backfill") or "maintenance commands only" in found.doc


#: Tables of the node itself (one row, never user data) that the readiness probe reads.
NODE_TABLES = ("system.local",)

#: The words a function's docstring must contain for a DELETE in it to remove more than
#: one row (a whole partition, or a clustering range), so the reason is written down.
WIDE_DELETE_DOC = re.compile(r"whole partition|partitions|clustering range", re.I)


@dataclass
class Verdict:
    found: Found
    table: str = "?"
    kind: str = "?"
    keys: str = "?"
    bound: str = "?"
    problems: list[str] = field(default_factory=list)


def audit(found: Found, schema: dict[str, TableKeys]) -> Verdict:
    verdict = Verdict(found)
    if any(f" FROM {name}" in found.text for name in NODE_TABLES):
        verdict.table, verdict.kind, verdict.keys, verdict.bound = "system.local", "SELECT", "node", "one row"
        return verdict
    try:
        statement = parse(found.text)
    except Unauditable as exc:
        verdict.problems.append(f"unauditable: {exc}")
        return verdict
    verdict.table, verdict.kind = statement.table, statement.kind
    keys = schema.get(statement.table)
    if keys is None:
        verdict.problems.append(f"table {statement.table!r} is not in the keyspace")
        return verdict
    eq, ranged = statement.eq(), statement.ranged()
    partition_named = set(keys.partition) <= eq
    if statement.kind == "SELECT" and is_maintenance(found):
        verdict.keys = "partition" if partition_named else "scan (maintenance command)"
        verdict.bound = "LIMIT" if statement.limit else "maintenance command"
        if statement.allow_filtering:
            verdict.problems.append("ALLOW FILTERING")
        return verdict
    if statement.kind == "SELECT":
        scan = next((s for s in RANGE_SCANS if s.table == statement.table), None)
        if partition_named:
            verdict.keys = "partition"
        elif scan is not None and not eq & set(keys.partition):
            verdict.keys = "token range (documented)"
        else:
            verdict.keys = "RANGE SCAN"
            verdict.problems.append("does not restrict every partition-key column with = or IN")
        single_row = set(keys.clustering) <= eq
        if statement.limit:
            verdict.bound = "LIMIT"
        elif single_row:
            verdict.bound = "one row" if keys.clustering or partition_named else "?"
            if not partition_named:
                verdict.bound = "UNBOUNDED"
        else:
            verdict.bound = "UNBOUNDED"
        if verdict.bound == "UNBOUNDED":
            verdict.problems.append("neither LIMIT nor equality on every clustering column")
        if statement.allow_filtering:
            verdict.problems.append("ALLOW FILTERING")
        return verdict
    if statement.kind == "INSERT":
        missing = [c for c in keys.primary if c not in statement.written]
        verdict.keys = "full key" if not missing else f"missing {', '.join(missing)}"
        verdict.bound = "one row"
        if missing:
            verdict.problems.append(f"INSERT without primary-key column(s) {missing}")
        return verdict
    if not partition_named:
        verdict.keys = "RANGE"
        verdict.problems.append(f"{statement.kind} does not name the whole partition key with =")
        return verdict
    if set(keys.clustering) <= eq:
        verdict.keys, verdict.bound = "full key", "one row"
        return verdict
    if statement.kind == "UPDATE":
        verdict.keys = "partial key"
        verdict.problems.append("UPDATE without every clustering column")
        return verdict
    verdict.keys = "clustering range" if ranged else "whole partition"
    verdict.bound = "documented" if WIDE_DELETE_DOC.search(found.doc) else "UNDOCUMENTED"
    if verdict.bound == "UNDOCUMENTED":
        verdict.problems.append(
            f"DELETE of a {verdict.keys} whose function docstring does not say so"
            " ('whole partition', 'partitions' or 'clustering range')"
        )
    return verdict


def table(verdicts: list[Verdict]) -> str:
    rows = [("table", "kind", "key use", "bound", "where", "problems", "statement")]
    for v in verdicts:
        where = f"{v.found.module}:{v.found.line}" if v.found.line else v.found.module
        rows.append((v.table, v.kind, v.keys, v.bound, where, "; ".join(v.problems) or "ok", v.found.text))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for r in rows:
        head = "  ".join(r[i].ljust(widths[i]) for i in range(5))
        lines.append(f"{head}  {r[5]}\n    {r[6]}" if r is not rows[0] else f"{head}  problems / statement")
    return "\n".join(lines)
