"""Automatic persisted queries (Apollo's protocol) and trusted documents.

A request may carry ``extensions.persistedQuery = {version: 1, sha256Hash}``:

- without a query, the hash names a document the gateway has seen; an unknown
  hash answers ``PersistedQueryNotFound`` (code ``PERSISTED_QUERY_NOT_FOUND``)
  and the client retries with the query;
- with a query, the hash must be the query's SHA-256, and the gateway remembers
  the document for later hash-only requests (GET ones too, which caches can keep).

With ``GATEWAY_TRUSTED_DOCUMENTS`` the manifest is the only source of documents:
nothing is registered, and a document outside it answers ``PERSISTED_QUERY_NOT_FOUND``
(introspection too, unless ``GATEWAY_INTROSPECTION=1``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSyntaxError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    parse,
)
from strawberry.types import ExecutionResult

NOT_FOUND_MESSAGE = "PersistedQueryNotFound"
NOT_TRUSTED_MESSAGE = "PersistedQueryNotFound: only the gateway's trusted documents may run."

#: Bounds of the in-process store: enough for every operation of a few client builds.
MAX_DOCUMENTS = 5000
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024

_SHA256 = re.compile(r"[0-9a-f]{64}")


class DocumentStore(Protocol):
    """Where registered documents live, by the hex SHA-256 of their text.

    The in-process store serves one instance; a shared backend (a broker such as
    Redis) implements the same two calls to serve every instance.
    """

    async def get(self, sha256: str) -> str | None: ...

    async def put(self, sha256: str, document: str) -> None: ...


class LruDocumentStore:
    """A bounded least-recently-used store, by count and by total size of the documents."""

    def __init__(self, max_documents: int = MAX_DOCUMENTS, max_bytes: int = MAX_DOCUMENT_BYTES) -> None:
        self.max_documents = max_documents
        self.max_bytes = max_bytes
        self._documents: OrderedDict[str, str] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._documents)

    async def get(self, sha256: str) -> str | None:
        document = self._documents.get(sha256)
        if document is not None:
            self._documents.move_to_end(sha256)
        return document

    async def put(self, sha256: str, document: str) -> None:
        size = len(document)
        if size > self.max_bytes:
            return
        previous = self._documents.pop(sha256, None)
        if previous is not None:
            self._bytes -= len(previous)
        self._documents[sha256] = document
        self._bytes += size
        while len(self._documents) > self.max_documents or self._bytes > self.max_bytes:
            _, evicted = self._documents.popitem(last=False)
            self._bytes -= len(evicted)


def sha256_hex(document: str) -> str:
    return hashlib.sha256(document.encode()).hexdigest()


def load_trusted_documents(path: Path) -> dict[str, str]:
    """A manifest: ``{sha256: document}``, or Apollo's ``{"operations": [{"id", "body"}]}``.

    Every hash must be its document's SHA-256, so a hash-only request and a
    request with the full text name the same operation.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"GATEWAY_TRUSTED_DOCUMENTS: cannot read {path}: {exc}") from exc
    if isinstance(raw, dict) and isinstance(raw.get("operations"), list):
        raw = {op.get("id"): op.get("body") for op in raw["operations"] if isinstance(op, dict)}
    if not isinstance(raw, dict):
        raise ValueError(f"GATEWAY_TRUSTED_DOCUMENTS: {path} is not a JSON object of hash to document")
    documents: dict[str, str] = {}
    for sha256, document in raw.items():
        if not isinstance(sha256, str) or not isinstance(document, str):
            raise ValueError(f"GATEWAY_TRUSTED_DOCUMENTS: {path} maps {sha256!r} to a non-document")
        key = sha256.removeprefix("sha256:").lower()
        if key != sha256_hex(document):
            raise ValueError(f"GATEWAY_TRUSTED_DOCUMENTS: {sha256} is not the SHA-256 of its document")
        documents[key] = document
    return documents


def _only_introspection(
    selection_set: SelectionSetNode, fragments: Mapping[str, FragmentDefinitionNode]
) -> bool:
    """Whether every field under ``selection_set`` is a meta-field. A walk with a stack, each
    fragment visited once: recursive fragments (which validation refuses later) end it."""
    pending = [selection_set]
    visited: set[str] = set()
    while pending:
        for selection in pending.pop().selections:
            if isinstance(selection, FieldNode):
                if not selection.name.value.startswith("__"):
                    return False
            elif isinstance(selection, InlineFragmentNode):
                pending.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = fragments.get(name)
                if fragment is None:
                    return False
                if name not in visited:
                    visited.add(name)
                    pending.append(fragment.selection_set)
    return True


def is_introspection(document: str) -> bool:
    """Whether every operation of ``document`` asks only for ``__schema``, ``__type`` or ``__typename``."""
    try:
        parsed = parse(document)
    except GraphQLSyntaxError:
        return False
    fragments = {d.name.value: d for d in parsed.definitions if isinstance(d, FragmentDefinitionNode)}
    operations = [d for d in parsed.definitions if isinstance(d, OperationDefinitionNode)]
    return bool(operations) and all(_only_introspection(op.selection_set, fragments) for op in operations)


def _error(message: str, code: str) -> ExecutionResult:
    return ExecutionResult(data=None, errors=[GraphQLError(message, extensions={"code": code})])


class PersistedQueries:
    """Turns a request's query and extensions into the document to run, or an error result.

    ``None`` is a request with neither a query nor a hash: the view answers it as before.
    """

    def __init__(
        self,
        store: DocumentStore | None = None,
        trusted: Mapping[str, str] | None = None,
        introspection: bool = False,
    ) -> None:
        self.store = store or LruDocumentStore()
        self.trusted = trusted
        self.introspection = introspection

    async def document(
        self, query: str | None, extensions: Mapping[str, Any] | None
    ) -> str | ExecutionResult | None:
        persisted = (extensions or {}).get("persistedQuery")
        sha256: str | None = None
        if persisted is not None:
            if not isinstance(persisted, dict) or persisted.get("version") != 1:
                return _error("Unsupported persisted query version: only version 1 is.", "BAD_REQUEST")
            value = persisted.get("sha256Hash")
            if not isinstance(value, str) or not _SHA256.fullmatch(value):
                return _error("persistedQuery.sha256Hash must be 64 lowercase hex digits.", "BAD_REQUEST")
            sha256 = value
            if query is not None and sha256_hex(query) != sha256:
                return _error("The provided sha256Hash does not match the query.", "BAD_REQUEST")
        if self.trusted is not None:
            return self._trusted(query, sha256)
        if sha256 is None:
            return query
        if query is None:
            document = await self.store.get(sha256)
            if document is None:
                return _error(NOT_FOUND_MESSAGE, "PERSISTED_QUERY_NOT_FOUND")
            return document
        return query

    async def remember(
        self,
        query: str | None,
        extensions: Mapping[str, Any] | None,
        admit: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        """Register a query sent with its hash, once it has run: the caller calls this only
        for a document that parsed and validated, so no junk text is kept under its hash.

        A document the store does not know yet is kept only if ``admit()`` says so (the
        client's registration rate limit); one it knows costs nothing and stays."""
        persisted = (extensions or {}).get("persistedQuery")
        if self.trusted is not None or query is None or not isinstance(persisted, dict):
            return
        sha256 = persisted.get("sha256Hash")
        if not (isinstance(sha256, str) and _SHA256.fullmatch(sha256) and sha256_hex(query) == sha256):
            return
        if admit is not None:
            if await self.store.get(sha256) is not None or not await admit():
                return
        await self.store.put(sha256, query)

    def _trusted(self, query: str | None, sha256: str | None) -> str | ExecutionResult | None:
        assert self.trusted is not None
        if sha256 is None:
            if query is None:
                return None
            if self.introspection and is_introspection(query):
                return query
            sha256 = sha256_hex(query)
        document = self.trusted.get(sha256)
        if document is None:
            return _error(NOT_TRUSTED_MESSAGE, "PERSISTED_QUERY_NOT_FOUND")
        return document


def from_settings(
    trusted_documents: Path | None, introspection: bool, store: DocumentStore | None = None
) -> PersistedQueries:
    """Trusted documents are a local file (every process reads the same manifest);
    registered ones live in ``store``, this process's memory unless given."""
    trusted = load_trusted_documents(trusted_documents) if trusted_documents is not None else None
    return PersistedQueries(store or LruDocumentStore(), trusted, introspection)
