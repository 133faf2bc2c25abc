"""Hostile requests to ``/graphql``, each with the status and code the contract gives it.

Every request is sent with ``Accept: application/graphql-response+json``, so
request errors answer with their 4xx status (``application/json`` clients get
200 for errors GraphQL itself reports, see ``gateway/http/media.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

GRJ = "application/graphql-response+json"


@dataclass(frozen=True)
class Hostile:
    name: str
    body: bytes | None
    content_type: str | None = "application/json"
    status: int = 400
    code: str = "BAD_REQUEST"
    method: str = "POST"
    query_string: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    #: A batch answers an array, every item with ``code``.
    batch: bool = False


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def doubling_bomb(depth: int, leaf: str) -> str:
    """``F0`` spreads ``F1`` twice, ``F1`` spreads ``F2`` twice ...: 2**depth leaves when expanded."""
    fragments = [f"fragment F{n} on Query {{ ...F{n + 1} ...F{n + 1} }}" for n in range(depth)]
    fragments.append(f"fragment F{depth} on Query {{ {leaf} }}")
    return "query { ...F0 }\n" + "\n".join(fragments)


#: Multipart requests carry a CSRF preflight header (the gateway refuses them without one).
PREFLIGHT = {"GraphQL-Preflight": "1"}
_UPLOAD = (
    b'--b\r\nContent-Disposition: form-data; name="operations"\r\n\r\n'
    b'{"query": "mutation($f: [Upload!]) { sendEmail(input: {to: [\\"nobody\\"], subject: \\"s\\",'
    b' body: \\"b\\", attachments: $f}) { id } }", "variables": {"f": [null]}}\r\n'
    b'--b\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0": ["variables.f.0"]}\r\n'
)


def file_part(headers: bytes) -> bytes:
    """The upload above, then its file part with ``headers``."""
    return (
        _UPLOAD
        + b'--b\r\nContent-Disposition: form-data; name="0"; filename="a"\r\n'
        + headers
        + (b"\r\nx\r\n--b--\r\n")
    )


def nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


CORPUS: list[Hostile] = [
    Hostile(
        "doubling bomb, __typename leaves",
        _json({"query": doubling_bomb(40, "__typename")}),
        code="QUERY_TOO_COMPLEX",
    ),
    Hostile(
        "doubling bomb, real fields",
        _json({"query": doubling_bomb(40, "posts(first: 100) { nodes { slug } }")}),
        code="QUERY_TOO_COMPLEX",
    ),
    Hostile(
        "alias flood",
        _json({"query": "{ " + " ".join(f"a{n}: __typename" for n in range(600)) + " }"}),
        code="QUERY_TOO_COMPLEX",
    ),
    Hostile(
        "aliases over the limit",
        _json({"query": "{ " + " ".join(f"a{n}: __typename" for n in range(31)) + " }"}),
        code="QUERY_TOO_COMPLEX",
    ),
    Hostile(
        "deep selection",
        _json(
            {
                "query": "{ me { user { "
                + "rooms { nodes { participants { " * 8
                + "login"
                + " } } }" * 8
                + " } } }"
            }
        ),
        code="QUERY_TOO_COMPLEX",
    ),
    Hostile(
        "token flood",
        _json({"query": "{ __typename " + "__typename " * 3000 + "}"}),
        code="QUERY_TOO_COMPLEX",
    ),
    Hostile(
        "huge variable within the body limit",
        _json(
            {
                "query": "query($t: String!) { posts(first: 1, tag: $t) { nodes { slug } } }",
                "variables": {"t": "x" * 900_000},
            }
        ),
        status=200,
        code="BAD_USER_INPUT",
    ),
    Hostile(
        "body over the JSON limit",
        _json({"query": "{ __typename }", "variables": {"x": "y" * (2 << 20)}}),
        status=413,
    ),
    Hostile(
        "deeply nested list in variables",
        b'{"query": "query($v: [String]) { __typename }", "variables": {"v": '
        + nested_list(100_000).encode()
        + b"}}",
    ),
    Hostile(
        "nested list variable of the wrong depth",
        _json(
            {
                "query": "query($t: [String!]) { posts(first: 1, tag: $t) { nodes { slug } } }",
                "variables": {"t": json.loads(nested_list(50))},
            }
        ),
        code="BAD_USER_INPUT",
    ),
    Hostile("invalid UTF-8 body", b'{"query": "{ __typename \xff\xfe }"}'),
    Hostile(
        "invalid UTF-8 in a multipart field",
        b'--b\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{"query": "\xff\xfe"}\r\n'
        b'--b\r\nContent-Disposition: form-data; name="map"\r\n\r\n{}\r\n--b--\r\n',
        content_type="multipart/form-data; boundary=b",
        headers=PREFLIGHT,
    ),
    Hostile("text/plain body", b'{"query": "{ __typename }"}', content_type="text/plain", status=415),
    Hostile("XML body", b"<query>{ __typename }</query>", content_type="application/xml", status=415),
    Hostile(
        "form-urlencoded body",
        b"query=%7B__typename%7D",
        content_type="application/x-www-form-urlencoded",
        status=415,
    ),
    Hostile("no content type", b'{"query": "{ __typename }"}', content_type=None, status=415),
    Hostile("malformed JSON", b'{"query": "{ __typename }"'),
    Hostile("JSON that is a string", b'"{ __typename }"'),
    Hostile("JSON that is a number", b"42"),
    Hostile("JSON null", b"null"),
    Hostile("query that is not a string", _json({"query": ["{ __typename }"]})),
    Hostile("variables that are a list", _json({"query": "{ __typename }", "variables": [1]})),
    Hostile("empty body", b""),
    Hostile("no query", _json({"variables": {}})),
    Hostile("NUL in the document", _json({"query": "{ __typ\x00ename }"}), code="GRAPHQL_PARSE_FAILED"),
    Hostile(
        "oversized bearer token",
        _json({"query": "{ me { user { login } } }"}),
        headers={"Authorization": "Bearer " + "t" * 7000},
        status=200,
        code="UNAUTHENTICATED",
    ),
    Hostile(
        "malformed multipart: no boundary", b"--x\r\n", content_type="multipart/form-data", headers=PREFLIGHT
    ),
    Hostile(
        "multipart without a CSRF preflight header",
        file_part(b""),
        content_type="multipart/form-data; boundary=b",
    ),
    Hostile(
        "gzip-encoded request body",
        bytes.fromhex("1f8b08000000000000ffab56"),
        headers={"Content-Encoding": "gzip"},
        status=415,
    ),
    Hostile(
        "gzip-encoded multipart body",
        bytes.fromhex("1f8b08000000000000ffab56"),
        content_type="multipart/form-data; boundary=b",
        headers={**PREFLIGHT, "Content-Encoding": "gzip"},
        status=415,
    ),
    Hostile(
        "malformed multipart: truncated",
        b'--b\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{',
        content_type="multipart/form-data; boundary=b",
        headers=PREFLIGHT,
    ),
    Hostile(
        "malformed multipart: garbage",
        b"\x00\x01garbage" * 100,
        content_type="multipart/form-data; boundary=b",
        headers=PREFLIGHT,
    ),
    Hostile(
        "GET mutation",
        None,
        method="GET",
        content_type=None,
        status=405,
        query_string="query=" + "mutation%20%7B%20signOut%20%7D",
    ),
    Hostile(
        "batch over the limit",
        _json([{"query": "{ __typename }"}] * 11),
        status=200,
        code="QUERY_TOO_COMPLEX",
        batch=True,
    ),
    Hostile(
        "batch over the cost budget",
        _json(
            [{"query": "{ posts(first: 100) { nodes { comments(first: 100) { nodes { body } } } } }"}] * 10
        ),
        status=200,
        code="QUERY_TOO_COMPLEX",
        batch=True,
    ),
]
