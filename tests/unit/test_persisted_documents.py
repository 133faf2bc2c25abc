"""Which documents a gateway locked to trusted documents still lets in as introspection."""

from __future__ import annotations

import pytest

from gateway.http.persisted import is_introspection


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("{ __schema { types { name } } }", True),
        ('{ __type(name: "User") { name } __typename }', True),
        ("query { ...F } fragment F on Query { __schema { queryType { name } } }", True),
        ("{ __typename me { user { login } } }", False),
        ("query { ...F } fragment F on Query { me { user { login } } }", False),
        ("query { ...Missing }", False),
        ("not a document", False),
        # Recursive fragments: invalid, refused by validation later; here they must end.
        ("query { ...A } fragment A on Query { ...B } fragment B on Query { ...A __typename }", True),
        ("query { ...A } fragment A on Query { ...A me { user { login } } }", False),
    ],
)
def test_introspection_documents_are_told_apart(document: str, expected: bool) -> None:
    assert is_introspection(document) is expected


def test_deep_inline_fragments_do_not_exhaust_the_stack() -> None:
    depth = 5000
    document = "{ " + "... on Query { " * depth + "__typename" + " }" * depth + " }"
    assert is_introspection(document) is False  # too deep to parse: an answer, not a RecursionError
