"""Strawberry's parser cache, with syntax errors left to Strawberry's guarded parse."""

from __future__ import annotations

from collections.abc import Iterator

from graphql import GraphQLError
from strawberry.extensions import ParserCache

__all__ = ["GuardedParserCache"]


class GuardedParserCache(ParserCache):
    """``ParserCache`` parses in its ``on_parse`` hook, outside the guard Strawberry keeps
    over its own parse. Over HTTP, ``execute`` catches what the hook raises; a WebSocket
    operation runs through ``stream``, which does not, so a document that did not parse
    escaped its operation's task: a traceback in the log, and no answer to the client. On a
    syntax error this hook leaves the document unparsed; Strawberry's own parse then fails
    inside its guard and answers as the protocol says (``graphql-transport-ws`` closes the
    socket with 4400, legacy ``graphql-ws`` sends an ``error``, HTTP is unchanged). A failed
    parse is linear in the document, which the token limit bounds, and was never cached."""

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        try:
            context.graphql_document = self.cached_parse_document(context.query, **context.parse_options)
        except GraphQLError:
            context.graphql_document = None
        yield
