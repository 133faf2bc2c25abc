"""Documents of the limits tests."""

from __future__ import annotations

NESTED = (
    "{ rooms(first: 100) { nodes { participants(first: 100) { nodes { rooms(first: 100) { nodes {"
    " participants(first: 100) { nodes { login } } } } } } } } }"
)
