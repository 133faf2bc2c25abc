"""The GraphQL multipart request spec, checked before a single file byte is read.

``operations`` and ``map`` come first in the body; from them alone the gateway
knows the operation and where every file goes. :func:`upload_targets` accepts
them only when the operation parses, keeps within the query limits and
validates, is a mutation, and every map entry points at exactly one ``Upload``
position of its variables (``variables.input.attachments.0``). Anything else is
a :class:`~gateway.http.requests.RequestRefused`, so a caller refuses the
request with nothing read past ``map`` and nothing stored.
"""

from __future__ import annotations

import json
from typing import Any

from graphql import (
    GraphQLError,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    GraphQLType,
    OperationType,
    get_operation_ast,
    parse,
    type_from_ast,
    validate,
)

from gateway.graph.limits import check
from gateway.http.requests import Endpoint, RequestRefused, bad_request, parse_request_json

#: The most bytes the ``map`` field may have.
MAX_MAP_BYTES = 64 * 1024
#: The name of the scalar the spec's files replace.
UPLOAD = "Upload"

SPEC_ORDER = (
    "A multipart request must send `operations`, then `map`, then the files the map names "
    "(GraphQL multipart request spec)."
)


def _json(raw: str, field: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise bad_request(f"`{field}` is not valid JSON.") from exc


def parse_operations(raw: str) -> dict[str, Any]:
    operations = parse_request_json(raw)
    if isinstance(operations, list):
        raise bad_request("Files cannot be uploaded with a batch of operations; send one operation.")
    return operations


def parse_map(raw: str) -> dict[str, list[str]]:
    """``map``: file field name → the paths that file fills (at least one each)."""
    mapping = _json(raw, "map")
    if not isinstance(mapping, dict):
        raise bad_request("`map` must be a JSON object of field name → list of paths.")
    for name, paths in mapping.items():
        if not name or not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise bad_request(f"`map` entry {name!r} must be a non-empty list of paths.")
    return mapping


def _target_type(variable_type: GraphQLType, path: list[str]) -> GraphQLType | None:
    """The type at ``path`` inside a value of ``variable_type``, or None if there is none."""
    current = variable_type
    for segment in path:
        if isinstance(current, GraphQLNonNull):
            current = current.of_type
        if isinstance(current, GraphQLList) and segment.isdigit():
            current = current.of_type
        elif isinstance(current, GraphQLInputObjectType) and segment in current.fields:
            current = current.fields[segment].type
        else:
            return None
    return current.of_type if isinstance(current, GraphQLNonNull) else current


def _refuse_errors(errors: list[GraphQLError], code: str) -> RequestRefused:
    return RequestRefused(400, errors[0].message, code)


def upload_targets(endpoint: Endpoint, operations: dict[str, Any], mapping: dict[str, list[str]]) -> None:
    """Refuse ``operations`` and ``mapping`` unless every file lands on an ``Upload`` variable."""
    if not mapping:
        return
    query = operations.get("query")
    if not isinstance(query, str):
        raise bad_request("An upload needs the operation's `query` text in `operations`.")
    try:
        document = parse(query, max_tokens=endpoint.max_tokens)
    except GraphQLError as exc:
        raise RequestRefused(400, exc.message, "GRAPHQL_PARSE_FAILED") from exc
    raw_name = operations.get("operationName")
    name = raw_name if isinstance(raw_name, str) else None
    operation = get_operation_ast(document, name)
    if operation is None:
        raise bad_request("`operations` does not name one operation of its document.")
    if operation.operation != OperationType.MUTATION:
        raise bad_request("Files can only be uploaded to a mutation.")
    raw_variables = operations.get("variables")
    variables = raw_variables if isinstance(raw_variables, dict) else None
    _, broken = check(endpoint.schema, document, endpoint.limits, variables, name)
    if broken:
        raise _refuse_errors(broken, "QUERY_TOO_COMPLEX")
    invalid = validate(endpoint.schema, document)
    if invalid:
        raise _refuse_errors(invalid, "GRAPHQL_VALIDATION_FAILED")
    declared = {
        definition.variable.name.value: type_from_ast(endpoint.schema, definition.type)
        for definition in operation.variable_definitions or ()
    }
    seen: set[str] = set()
    for field, paths in mapping.items():
        for path in paths:
            segments = path.split(".")
            if len(segments) < 2 or segments[0] != "variables" or segments[1] not in declared:
                raise bad_request(f"`map` entry {field!r}: {path!r} is not a path into `variables`.")
            declared_type = declared[segments[1]]
            target = _target_type(declared_type, segments[2:]) if declared_type is not None else None
            if not (isinstance(target, GraphQLScalarType) and target.name == UPLOAD):
                raise bad_request(f"`map` entry {field!r}: {path!r} is not an `{UPLOAD}` variable.")
            if path in seen:
                raise bad_request(f"`map` names {path!r} twice.")
            seen.add(path)
