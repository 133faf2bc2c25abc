"""graphql-core's and Strawberry's internals: the one module of the gateway that reaches into them.

Speed made the gateway extend graphql-core's executor and Strawberry's execution
past their documented API. Every private name (and every method marked private
or class left unexported) it uses is named here, as a small function, a constant
or a re-export named for what it does; the rest of the code imports those.
:data:`REACHES` lists each one with what the gateway expects of it, and
``tests/unit/test_upstream_fences.py`` checks them against the installed
libraries in seconds, so an upgrade that moves one fails with its name.

Pinned: graphql-core 3.3.2 and strawberry-graphql 0.341.2 (:data:`PINNED`,
``pyproject.toml``).

Documented extension points come first: the plain-field executor is installed
with Strawberry's ``Schema(execution_context_class=...)``; a definition is found
under ``GraphQLCoreConverter.DEFINITION_BACKREF`` (the code spelled the key
``"strawberry-definition"`` before); Int values fall back to
``GraphQLInt.coerce_output_value`` (``serialize_int`` before); and whether
middleware runs is read from ``MiddlewareManager.middlewares`` (its private
``_middleware_resolvers`` before, None exactly when that is empty).

One row per reach: what is replaced or reached into, why (the measurements are in
``bench/NOTES.md`` under the module named, with the commit that made the change), the
version it was checked against, the test that holds it to the original, and the switch
that turns it off.

1. graphql-core's ``Executor`` methods marked private: ``execute_fields``,
   ``execute_field``, ``execute_root_grouped_field_set``, ``collect_subfields`` (a
   three-item ``CollectedFields``), ``settle_in_background``, ``track_async_work``,
   its ``async_helpers``; ``GroupedFieldSet``, ``FieldDetails``; Strawberry's
   unexported ``StrawberryGraphQLCoreExecutionContext`` -- the plain-field executor
   (``gateway/graph/plain_fields.py``), installed through ``execution_context_class``.

   - why: a plain field is read and serialised in place instead of through a resolve
     info, a resolver and ``complete_value`` each, whole plain subtrees with it, from
     plans compiled once per document (c95e1e0, 74b6f8c, ca4d8bb); the executor's
     resolver-info helpers hold it weakly, so no execution is a reference cycle (03ebc32;
     live deliveries', subscriptions' and cancelled requests' too since); introspection
     runs on a worker thread, not on the loop (f5edc5c). Numbers: ``bench/NOTES.md``,
     gateway/graph/plain_fields.py.
   - pinned: graphql-core 3.3.2, strawberry-graphql 0.341.2 (``execute_fields``'s source
     is fingerprinted: the fast path's loop follows it).
   - test: ``tests/integration/test_plain_fields.py`` (edge and domain corpora, byte for byte against
     the reference executor), ``tests/unit/test_introspection_cost.py``, ``tests/integration/test_heap.py``,
     ``tests/integration/test_live_memory.py``.
   - off: ``GATEWAY_PLAIN_FIELDS=0``.

2. Strawberry's ``_get_basic_result`` (the name of the resolver it makes for a field with
   none), ``StrawberryField.is_basic_field``, ``default_resolver``, ``python_name``,
   ``extensions``, ``metadata`` -- how the plain-field executor knows a field it may read
   itself.

   - why: as row 1 (c95e1e0, 74b6f8c).
   - pinned: strawberry-graphql 0.341.2.
   - test: ``tests/integration/test_plain_fields.py::test_object_subtrees_are_read_in_place`` (counts
     the fields read in place); ``tests/unit/test_upstream_fences.py`` builds a schema and
     finds its basic field's resolver by this name.
   - off: ``GATEWAY_PLAIN_FIELDS=0``.

3. Strawberry's ``TYPE_CAST_ATTRIBUTE``, ``StrawberryObjectDefinition.is_type_of`` and
   ``origin`` -- an object of a Node type is checked without Strawberry's lookups.

   - why: an instance of the type's own class, not cast, is what Strawberry's check
     accepts; the check's attribute lookups ran for every object of a page (d9cea7a;
     ``bench/NOTES.md``, gateway/graph/plain_fields.py).
   - pinned: strawberry-graphql 0.341.2.
   - test: ``tests/integration/test_plain_fields.py::test_edge_corpus_is_byte_identical`` (casts to
     another type, to itself, subclasses).
   - off: ``GATEWAY_PLAIN_FIELDS=0``.

4. Strawberry's ``SchemaExtensionsRunner`` (its stages ``operation``, ``parsing``,
   ``validation``, ``executing``, and ``get_extensions_results``) and
   ``Schema.create_extensions_runner`` -- extension hooks run without a context manager per
   hook per request, found once per list of extension classes, and results asked only of the
   extensions that have their own (``gateway/graph/hooks.py``).

   - why: Strawberry's runner wraps every hook in a new context manager per stage per
     operation, about half of executing ``{ __typename }`` (``bench/NOTES.md``,
     gateway/graph/hooks.py; dc43218).
   - pinned: strawberry-graphql 0.341.2.
   - test: ``tests/unit/test_hooks.py`` (every pair of 14 hook behaviours against Strawberry's runner).
   - off: none.

5. Strawberry's ``Schema._schema`` (the graphql-core schema) and ``validate_document``
   (graphql-core's ``validate`` with Strawberry's own rules) -- validation cached per
   document text, the static cost walked before it (``gateway/graph/limits.py``,
   ``gateway/http/batch.py``, ``gateway/server/app.py``).

   - why: Strawberry's ``ValidationCache`` keys by the parsed document, whose hash walks the
     whole tree per request (deec177); no public accessor gives the graphql-core schema.
   - pinned: strawberry-graphql 0.341.2.
   - test: ``tests/integration/test_limits.py``, ``tests/integration/test_batch.py``.
   - off: none (the same validation, run once per text).

6. Strawberry's ``Info._raw_info`` -- list resolvers look at the query's selection in
   graphql-core's AST (``gateway/graph/selection.py``).

   - why: ``info.selected_fields`` converts the field's whole subtree into Strawberry's
     nodes on each call, twice per talkPartners page (1552bae).
   - pinned: strawberry-graphql 0.341.2.
   - test: the domain corpora of ``tests/integration/test_plain_fields.py`` and the domains' statement
     counts (a prefetch that misses a selection costs more statements).
   - off: none.

7. Strawberry's DataLoader internals: ``get_current_batch``, ``Batch.tasks``, ``LoaderTask``,
   ``DefaultCache.cache_map``, ``DataLoader.loop``, ``cache_map`` and ``max_batch_size`` --
   the gateway's ``Loader`` rewrites ``load`` and ``load_many`` (``gateway/graph/dataloader.py``).

   - why: less per key when a page loads the users of 50 items at once: the cache read as
     the dict it is, no done-callback per key, the batch found once per ``load_many``
     (5262fec, 74b6f8c).
   - pinned: strawberry-graphql 0.341.2 (``DataLoader.load`` and ``dispatch_batch``
     fingerprinted: the rewrite follows the one and relies on the other skipping a batch
     whose futures are all cancelled).
   - test: ``tests/unit/test_dataloader.py::test_same_batches_and_answers_as_strawberry``.
   - off: none.

8. graphql-core's ``Executor.build``, ``build_per_event_executor`` and ``execute_operation``
   (public, undocumented), Strawberry's ``Schema.execution_context_class`` -- live delivery
   executes a subscription's selection over an event itself (``gateway/graph/live.py``).

   - why: one execution per event and distinct selection, not one per subscriber (1075013).
   - pinned: graphql-core 3.3.2, strawberry-graphql 0.341.2.
   - test: ``tests/integration/test_live_delivery.py``, ``tests/integration/test_rooms_subscription.py``,
     ``tests/integration/test_messenger_subscription.py``.
   - off: none.

9. Strawberry's WebSocket protocol handlers (``BaseGraphQLTransportWSHandler``,
   ``BaseGraphQLWSHandler``, their ``Operation``; public classes, undocumented methods) --
   the gateway's handlers (``gateway/http/websocket.py``) override ``handle``,
   ``handle_message``, ``handle_connection_init``, ``handle_subscribe``/``handle_start``,
   ``cleanup_operation``, ``run_operation``/``handle_async_results`` and ``send_message``,
   replace ``on_request_accepted`` (the ``connection_init`` deadline as a timer, not a task),
   and read ``operations``, ``tasks``, ``Operation.task`` and the connection flags. They
   rely on an operation's task being made and registered within ``handle_subscribe`` /
   ``handle_start`` without an await, on the operation's ``complete`` (and legacy keep-alives)
   going out through ``send_message``, and on ``handle`` starting the deadline through
   ``on_request_accepted``: those methods are fingerprinted.

   - why: sessions, caps and idleness per socket; a subscription the live hub delivers is
     parked once live, so an idle subscribed socket holds no task and no suspended
     execution (48 → 29 KiB per socket, traced; ``bench/NOTES.md``, live delivery); a
     message to a client that has gone is dropped instead of failing the task that sent it
     (Strawberry logged it as ``WebSocketDisconnected`` at ERROR).
   - pinned: strawberry-graphql 0.341.2.
   - test: ``tests/integration/test_websocket_sessions.py``, ``tests/integration/test_websocket_caps.py``,
     ``tests/integration/test_websocket_limits.py``, ``tests/integration/test_live_delivery.py``,
     ``tests/integration/test_live_memory.py``.
   - off: none.

10. Strawberry's ``AsyncBaseHTTPView.run`` (public) and ``_process_stream_result``: the
    HTTP view's two hooks, :class:`StreamPartsHook` and :class:`AnswersByClass` (not in
    :data:`REACHES`, which would fence every method the view overrides; each names what it
    replaces in ``REPLACES``, ``run`` by its source's fingerprint).

   - why: incremental parts in the shape the client asked for; Strawberry's ``run`` tells a
     subscription's stream from an answer with ``isinstance`` against a runtime ``Protocol``,
     9 µs per request, where the copy tells them apart by class (``bench/NOTES.md``,
     gateway/http/view.py).
   - pinned: strawberry-graphql 0.341.2.
   - test: ``tests/unit/test_upstream_fences.py``; ``tests/integration/test_graphql_http.py``,
     ``tests/integration/test_defer.py`` and every HTTP test.
   - off: none.

11. Strawberry's ``GraphQLCoreConverter.from_resolver``, ``get_arguments``,
    ``convert_arguments`` and ``convert_argument``, ``StrawberryField.get_result`` and
    ``base_resolver``, ``StrawberryResolver`` and its parameters -- :func:`lean_resolver`
    makes what ``from_resolver`` makes for a field whose resolver needs none of its layers
    (no field extension, no exception handler, arguments all scalars or optional scalars);
    ``gateway/graph/plain_fields.py`` installs it on the schema's fields.

   - why: an ``Info``, the argument conversion walking each argument's type, the extension
     chain and a coroutine around an async resolver, per call: about 13 µs of each resolver
     call, a fifth of a page of 50 items with two resolved fields each
     (``bench/NOTES.md``, gateway/graph/executor_internals.py).
   - pinned: strawberry-graphql 0.341.2 (the functions it stands for fingerprinted).
   - test: ``tests/unit/test_lean_resolvers.py`` (answers, errors and their order against
     Strawberry's resolvers; which fields keep Strawberry's), ``tests/integration/test_plain_fields.py``
     (the domain corpora against the reference executor, which keeps Strawberry's resolvers).
   - off: ``GATEWAY_PLAIN_FIELDS=0``.

12. Strawberry's ``Schema.execute`` (public) and the private steps it is made of
    (``_create_execution_context``, ``_get_middleware_manager``, ``_prepare_operation_async``,
    ``_execute_operation``, ``_handle_execution_result``, ``_coerce_error`` ...) --
    :class:`KnownDocuments` is a copy of ``execute`` (``REPLACES``, by its source's
    fingerprint) with a lane for a document the schema has run before: it starts parsed, without
    the parse-only extensions.

   - why: about 3 µs of the 44 µs Strawberry spends on ``{ __typename }`` in process, on
     every request of a client that sends the same documents (``bench.micro hooks``); the
     rest of ``execute`` is Strawberry's, unchanged, so its own steps stay fenced by name.
   - pinned: strawberry-graphql 0.341.2.
   - test: ``tests/unit/test_known_documents.py`` (a corpus against Strawberry's ``execute``,
     three rounds; what is never known; the bound), ``tests/integration/test_plain_fields.py``
     (the domain corpus's second round in the lane against the reference), the reference pass of
     ``.ci/run`` (the whole suite with the lane off).
   - off: ``GATEWAY_PLAIN_FIELDS=0``.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from typing import Any

import graphql
import strawberry
from cross_web import HTTPException
from graphql import DocumentNode, GraphQLInt, GraphQLResolveInfo, GraphQLSchema
from graphql.execution import Executor, ExperimentalIncrementalExecutionResults
from graphql.execution import collect_fields as graphql_collect_fields
from graphql.execution.collect_fields import CollectedFields, FieldDetailsList, GroupedFieldSet
from graphql.execution.middleware import MiddlewareManager
from strawberry import dataloader as strawberry_dataloader
from strawberry.dataloader import Batch, DataLoader, DefaultCache, LoaderTask, get_current_batch
from strawberry.exceptions import MissingQueryError
from strawberry.extensions import SchemaExtension
from strawberry.extensions import runner as strawberry_runner
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.http.async_base_view import AsyncBaseHTTPView
from strawberry.relay.types import GlobalID
from strawberry.scalars import is_scalar
from strawberry.schema import schema as strawberry_schema_module
from strawberry.schema import schema_converter as strawberry_converter
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.schema.schema import (
    DEFAULT_ALLOWED_OPERATION_TYPES,
    StrawberryGraphQLCoreExecutionContext,
    validate_document,
)
from strawberry.schema.schema import _coerce_error as strawberry_coerce_error
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.types import Info
from strawberry.types import arguments as strawberry_arguments
from strawberry.types import cast as strawberry_cast
from strawberry.types.base import StrawberryMaybe, StrawberryObjectDefinition, StrawberryOptional
from strawberry.types.cast import TYPE_CAST_ATTRIBUTE
from strawberry.types.execution import ExecutionResult as StrawberryExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.field import StrawberryField
from strawberry.types.fields.resolver import StrawberryResolver
from strawberry.types.graphql import OperationType
from strawberry.types.unset import UNSET

__all__ = [
    "BASIC_RESOLVER_NAME",
    "DEFINITION_KEY",
    "FENCED_LITERALS",
    "PINNED",
    "REACHES",
    "TYPE_CAST_ATTRIBUTE",
    "AnswersByClass",
    "Batch",
    "DefaultCache",
    "FieldDetailsList",
    "GroupedFieldSet",
    "LoaderTask",
    "SchemaExtensionsRunner",
    "StrawberryExecutor",
    "StreamPartsHook",
    "get_current_batch",
    "graphql_schema",
    "int_output",
    "is_basic_resolver",
    "lean_resolver",
    "resolve_info",
    "runs_middleware",
    "settle_in_background",
    "strawberry_definition",
    "subfields",
    "track_async_work",
    "validate_document",
]

#: The distributions and versions :data:`REACHES` was checked against.
PINNED = (("graphql-core", "3.3.2"), ("strawberry-graphql", "0.341.2"))

#: The executor Strawberry runs operations with (its resolve infos carry what Strawberry's
#: resolvers need); not exported by Strawberry. The plain-field executor extends it.
StrawberryExecutor = StrawberryGraphQLCoreExecutionContext

#: The key under which Strawberry keeps a graphql-core type's or field's own definition
#: in its ``extensions``.
DEFINITION_KEY: str = GraphQLCoreConverter.DEFINITION_BACKREF

#: The name of the resolver Strawberry makes for a field that has none (a plain attribute).
BASIC_RESOLVER_NAME = "_get_basic_result"

#: Strings that name Strawberry's internals: written nowhere else in the gateway.
FENCED_LITERALS = (DEFINITION_KEY, BASIC_RESOLVER_NAME)

#: graphql-core's output coercion of Int values.
int_output: Callable[[Any], int] = GraphQLInt.coerce_output_value

#: ``(owner, name, expectation)``: what the gateway uses and what it expects of it.
#: The expectations are those of ``gateway/db/driver_internals.py``'s ``REACHES``.
REACHES: tuple[tuple[object, str, str], ...] = (
    # The plain-field executor (gateway/graph/plain_fields.py).
    (strawberry_schema_module, "StrawberryGraphQLCoreExecutionContext", "attribute"),
    (
        Executor,
        "execute_root_grouped_field_set",
        "(self, root_type, root_value, grouped_field_set, serially, position_context)",
    ),
    (
        Executor,
        "execute_fields",
        "(self, parent_type, source_value, path, grouped_field_set, position_context)",
    ),
    (Executor, "execute_fields", "source 1427193778eb"),
    (Executor, "execute_field", "(self, parent_type, source, field_details_list, path, position_context)"),
    (Executor, "collect_subfields", "(self, return_type, field_details_list) -> CollectedFields"),
    (
        graphql_collect_fields,
        "CollectedFields",
        "fields (grouped_field_set, new_defer_usages, forbidden_directive_instances)",
    ),
    (graphql_collect_fields, "FieldDetails", "fields (node, defer_usage, fragment_variable_values)"),
    (graphql_collect_fields, "GroupedFieldSet", "attribute"),
    (graphql_collect_fields, "FieldDetailsList", "attribute"),
    (Executor, "settle_in_background", "(self, awaitables)"),
    (Executor, "track_async_work", "(self, values)"),
    (Executor, "async_helpers", "instance attribute"),
    (Executor, "middleware_manager", "instance attribute"),
    (Executor, "schema", "instance attribute"),
    (Executor, "operation", "instance attribute"),
    (Executor, "fragment_definitions", "instance attribute"),
    (Executor, "is_awaitable", "instance attribute"),
    (graphql, "GraphQLResolveInfoHelpers", "fields (gather, track)"),
    (MiddlewareManager, "middlewares", "attribute"),
    # Fields the executor reads itself.
    (GraphQLCoreConverter, "DEFINITION_BACKREF", "attribute"),
    (GraphQLCoreConverter, "from_resolver", "defines _get_basic_result"),
    (StrawberryField, "is_basic_field", "attribute"),
    (StrawberryField, "default_resolver", "attribute"),
    (StrawberryField, "python_name", "instance attribute"),
    (StrawberryField, "extensions", "instance attribute"),
    (StrawberryField, "metadata", "instance attribute"),
    # Lean resolvers (gateway/graph/plain_fields.py): what from_resolver makes, without its layers.
    (GraphQLCoreConverter, "from_resolver", "source de0f7e7f5ed6"),
    (GraphQLCoreConverter, "_get_field_exception_handlers", "(self, field)"),
    (GraphQLCoreConverter, "scalar_registry", "instance attribute"),
    (strawberry.Schema, "schema_converter", "instance attribute"),
    (strawberry_converter, "get_arguments", "source 968d9649e6fe"),
    (strawberry_arguments, "convert_arguments", "source 3eccf7fd3b66"),
    (strawberry_arguments, "convert_argument", "source 19aa99557fc1"),
    (StrawberryField, "get_result", "source 21e312fadeee"),
    (StrawberryField, "base_resolver", "instance attribute"),
    (StrawberryField, "is_subscription", "instance attribute"),
    (StrawberryResolver, "__call__", "source 375cdd0a502f"),
    (StrawberryResolver, "wrapped_func", "instance attribute"),
    (StrawberryResolver, "self_parameter", "attribute"),
    (StrawberryResolver, "parent_parameter", "attribute"),
    (StrawberryResolver, "root_parameter", "attribute"),
    (StrawberryResolver, "info_parameter", "attribute"),
    # Node objects checked without lookups.
    (strawberry_cast, "TYPE_CAST_ATTRIBUTE", "attribute"),
    (StrawberryObjectDefinition, "is_type_of", "instance attribute"),
    (StrawberryObjectDefinition, "origin", "instance attribute"),
    # Extension hooks (gateway/graph/hooks.py, gateway/graph/errors.py).
    (strawberry_runner, "SchemaExtensionsRunner", "attribute"),
    (SchemaExtensionsRunner, "__init__", "(self, execution_context, extensions)"),
    (SchemaExtensionsRunner, "extensions", "instance attribute"),
    (SchemaExtensionsRunner, "operation", "(self)"),
    (SchemaExtensionsRunner, "validation", "(self)"),
    (SchemaExtensionsRunner, "parsing", "(self)"),
    (SchemaExtensionsRunner, "executing", "(self)"),
    (SchemaExtensionsRunner, "get_extensions_results", "(self, ctx)"),
    (strawberry.Schema, "create_extensions_runner", "(self, execution_context, extensions)"),
    # The schema's documented methods ErrorCodeSchema extends (gateway/graph/errors.py): its
    # ``execute`` and ``stream`` read the context from the ``context_value`` keyword.
    (strawberry.Schema, "execute", "(self, query, variable_values, context_value, ...)"),
    (strawberry.Schema, "stream", "(self, query, variable_values, context_value, ...)"),
    (strawberry.Schema, "process_errors", "(self, errors, execution_context)"),
    # Validation and cost (gateway/graph/limits.py, gateway/http/batch.py, gateway/server/app.py).
    (strawberry.Schema, "_schema", "instance attribute"),
    (strawberry_schema_module, "validate_document", "(schema, document, validation_rules)"),
    # The known-documents lane (KnownDocuments, a copy of Strawberry's execute): what it calls.
    (strawberry_schema_module, "DEFAULT_ALLOWED_OPERATION_TYPES", "attribute"),
    (strawberry_schema_module, "_coerce_error", "(error)"),
    (strawberry.Schema, "_create_execution_context", "(self, query, allowed_operation_types, ...)"),
    (strawberry.Schema, "get_extensions", "(self, sync)"),
    (strawberry.Schema, "extensions", "instance attribute"),
    (strawberry.Schema, "directives", "instance attribute"),
    (strawberry.Schema, "_get_middleware_manager", "(self, extensions)"),
    (strawberry.Schema, "_get_execute_function", "(self)"),
    (strawberry.Schema, "_get_custom_context_kwargs", "(self, operation_extensions, ...)"),
    (strawberry.Schema, "_prepare_operation_async", "(self, context, extensions_runner)"),
    (strawberry.Schema, "_execute_operation", "(self, execution_context, extensions_runner, ...)"),
    (strawberry.Schema, "_handle_execution_result", "(self, context, result, extensions_runner, ...)"),
    # Selections in graphql-core's AST (gateway/graph/selection.py).
    (Info, "_raw_info", "instance attribute"),
    # Live delivery (gateway/graph/live.py): a selection executed over each event.
    (
        Executor,
        "build",
        "(cls, schema, document, root_value, context_value, raw_variable_values, operation_name, ...)",
    ),
    (Executor, "build_per_event_executor", "(self, payload)"),
    (Executor, "execute_operation", "(self, serially)"),
    (strawberry.Schema, "execution_context_class", "instance attribute"),
    # The DataLoader (gateway/graph/dataloader.py): its load and load_many, rewritten.
    (DataLoader, "__init__", "(self, load_fn, max_batch_size, cache, ...)"),
    (DataLoader, "load", "(self, key)"),
    (DataLoader, "load", "source 8784ab10f520"),
    (DataLoader, "load_many", "(self, keys)"),
    (DataLoader, "loop", "attribute"),
    (DataLoader, "cache_map", "instance attribute"),
    (DataLoader, "max_batch_size", "instance attribute"),
    (DefaultCache, "cache_map", "instance attribute"),
    (strawberry_dataloader, "Batch", "attribute"),
    (Batch, "tasks", "instance attribute"),
    (strawberry_dataloader, "LoaderTask", "fields (key, future)"),
    (strawberry_dataloader, "DefaultCache", "attribute"),
    (strawberry_dataloader, "get_current_batch", "(loader)"),
    (strawberry_dataloader, "dispatch_batch", "source 1585108d43c3"),
    # The WebSocket protocol handlers (gateway/http/websocket.py).
    (BaseGraphQLTransportWSHandler, "handle", "(self)"),
    (BaseGraphQLTransportWSHandler, "handle", "source 82937f9cc609"),
    (BaseGraphQLTransportWSHandler, "on_request_accepted", "(self)"),
    (BaseGraphQLTransportWSHandler, "handle_message", "(self, message)"),
    (BaseGraphQLTransportWSHandler, "handle_connection_init", "(self, message)"),
    (BaseGraphQLTransportWSHandler, "handle_subscribe", "(self, message)"),
    (BaseGraphQLTransportWSHandler, "handle_subscribe", "source 6b4874334a15"),
    (BaseGraphQLTransportWSHandler, "cleanup_operation", "(self, operation_id)"),
    (BaseGraphQLTransportWSHandler, "run_operation", "(self, operation)"),
    (BaseGraphQLTransportWSHandler, "run_operation", "source 79a5ad3e4096"),
    (BaseGraphQLTransportWSHandler, "send_message", "(self, message)"),
    (BaseGraphQLTransportWSHandler, "operations", "instance attribute"),
    (BaseGraphQLTransportWSHandler, "connection_init_received", "instance attribute"),
    (BaseGraphQLTransportWSHandler, "connection_timed_out", "instance attribute"),
    (BaseGraphQLTransportWSHandler, "connection_acknowledged", "instance attribute"),
    (BaseGraphQLTransportWSHandler, "connection_init_wait_timeout", "instance attribute"),
    (BaseGraphQLTransportWSHandler, "max_subscriptions_per_connection", "instance attribute"),
    (Operation, "send_operation_message", "source fc121406d326"),
    (Operation, "task", "attribute"),
    (Operation, "completed", "attribute"),
    (BaseGraphQLWSHandler, "handle", "(self)"),
    (BaseGraphQLWSHandler, "handle", "source d3f52bca9241"),
    (BaseGraphQLWSHandler, "handle_message", "(self, message)"),
    (BaseGraphQLWSHandler, "handle_connection_init", "(self, message)"),
    (BaseGraphQLWSHandler, "handle_start", "(self, message)"),
    (BaseGraphQLWSHandler, "handle_start", "source 340daea3bd8e"),
    (BaseGraphQLWSHandler, "cleanup_operation", "(self, operation_id)"),
    (BaseGraphQLWSHandler, "handle_async_results", "(self, operation_id, query, operation_name, variables)"),
    (BaseGraphQLWSHandler, "handle_async_results", "source afe98e702426"),
    (BaseGraphQLWSHandler, "handle_keep_alive", "source ac8e3f511057"),
    (BaseGraphQLWSHandler, "send_message", "(self, message)"),
    (BaseGraphQLWSHandler, "tasks", "instance attribute"),
    (BaseGraphQLWSHandler, "connection_acknowledged", "instance attribute"),
    (BaseGraphQLWSHandler, "max_subscriptions_per_connection", "instance attribute"),
)


def strawberry_definition(element: Any) -> Any:
    """The Strawberry definition of a graphql-core type or field, None when it has none."""
    return (element.extensions or {}).get(DEFINITION_KEY)


def is_basic_resolver(resolve: Any) -> bool:
    """Whether ``resolve`` is the resolver Strawberry made for a field without one."""
    return getattr(resolve, "__name__", "") == BASIC_RESOLVER_NAME


def lean_resolver(schema: strawberry.Schema, field: StrawberryField) -> Callable[..., Any] | None:
    """The resolver Strawberry's ``GraphQLCoreConverter.from_resolver`` makes for ``field``
    without its layers per call, or None when ``field`` needs one of them.

    Strawberry's resolver builds an ``Info``, converts the arguments
    (``get_arguments``: ``convert_arguments`` names each, ``convert_argument`` walks its
    type), passes them through the field's extensions, calls the function and, for an async
    one, awaits it inside a coroutine of its own. For a field with a resolver, no field
    extension (permissions are one), no exception handler that applies, and arguments that
    are all scalars or optional scalars (not ``GlobalID``, whose conversion parses it; not
    ``Maybe``, which wraps) that is: the values graphql-core coerced, under their Python
    names, the source and the ``Info`` where the function asks for them, and the function's
    own result (graphql-core awaits a coroutine as Strawberry's would have been).
    """
    resolver = field.base_resolver
    converter = schema.schema_converter
    if (
        resolver is None
        or field.extensions
        or field.is_subscription
        or converter._get_field_exception_handlers(field)
        or type(field).get_result is not StrawberryField.get_result
        or type(resolver).__call__ is not StrawberryResolver.__call__
        or not callable(resolver.wrapped_func)
    ):
        return None
    config = schema.config
    names: dict[str, str] = {}
    for argument in field.arguments:
        type_ = argument.type
        if isinstance(type_, StrawberryMaybe):
            return None
        if isinstance(type_, StrawberryOptional):
            type_ = type_.of_type
        if (
            type_ is GlobalID
            or isinstance(type_, StrawberryOptional)
            or not is_scalar(type_, converter.scalar_registry)
        ):
            return None
        assert argument.python_name
        names[config.name_converter.from_argument(argument)] = argument.python_name
    function = resolver.wrapped_func
    takes_self = resolver.self_parameter is not None
    sources = tuple(p.name for p in (resolver.parent_parameter, resolver.root_parameter) if p is not None)
    info_name = resolver.info_parameter.name if resolver.info_parameter is not None else None
    info_class = config.info_class

    def lean(_source: Any, info: GraphQLResolveInfo[Any], **kwargs: Any) -> Any:
        arguments = {names[name]: value for name, value in kwargs.items()}
        for name in sources:
            arguments[name] = _source
        if info_name is not None:
            arguments[info_name] = info_class(_raw_info=info, _field=field)
        if takes_self:
            return function(_source, **arguments)
        return function(**arguments)

    lean._is_default = False  # type: ignore[attr-defined]  # as Strawberry marks a resolver it made
    return lean


def subfields(
    executor: Executor[Any], object_type: Any, details: FieldDetailsList
) -> tuple[GroupedFieldSet, bool]:
    """The grouped field set of an object field's selection (memoised by the executor for the
    request), and whether it opens new ``@defer`` usages."""
    collected: CollectedFields = executor.collect_subfields(object_type, details)
    grouped_field_set, new_defer_usages, _ = collected
    return grouped_field_set, bool(new_defer_usages)


def settle_in_background(executor: Executor[Any], awaitables: list[Awaitable[Any]]) -> None:
    """Let the awaitables of a selection abandoned by an error finish (their errors seen)
    without waiting for them, as graphql-core's ``execute_fields`` does."""
    executor.settle_in_background(awaitables)


def track_async_work(executor: Executor[Any], values: Sequence[Any]) -> None:
    """What a resolver's ``info.async_helpers.track`` does: settle the awaitables among
    ``values`` in the background, as part of the executor's work."""
    executor.track_async_work(values)


def runs_middleware(executor: Executor[Any]) -> bool:
    """Whether graphql-core wraps the executor's resolvers in middleware."""
    manager = executor.middleware_manager
    return manager is not None and bool(manager.middlewares)


def graphql_schema(schema: strawberry.Schema) -> GraphQLSchema:
    """The graphql-core schema Strawberry built."""
    built: GraphQLSchema = schema._schema
    return built


def resolve_info(info: Info) -> GraphQLResolveInfo[Any]:
    """graphql-core's resolve info behind Strawberry's ``Info``."""
    raw: GraphQLResolveInfo[Any] = info._raw_info
    return raw


class AnswersByClass:
    """Strawberry's ``AsyncBaseHTTPView.run`` for an HTTP request (a WebSocket's takes
    Strawberry's), with the answer told apart by its class: Strawberry asks first whether it
    is a ``SubscriptionExecutionResult``, a runtime ``Protocol`` whose ``isinstance`` costs
    more than the rest of the method, and no answer of a view with this mixin is one (it
    refuses subscriptions over HTTP)."""

    #: What this hook replaces, as ``REACHES`` would list it.
    REPLACES = (AsyncBaseHTTPView, "run", "source ef34546f4b37")

    async def run(self: Any, request: Any, context: Any = UNSET, root_value: Any = UNSET) -> Any:
        if self.is_websocket_request(request):
            return await super().run(request, context, root_value)  # type: ignore[misc]
        root_value = await self.get_root_value(request) if root_value is UNSET else root_value
        request_adapter = self.request_adapter_class(request)
        sub_response = await self.get_sub_response(request)
        if context is UNSET:
            context = await self.get_context(request, response=sub_response)
        if not self.is_request_allowed(request_adapter):
            raise HTTPException(405, "GraphQL only supports GET and POST requests.")
        if self.should_render_graphql_ide(request_adapter):
            if self.graphql_ide:
                return await self.render_graphql_ide(request)
            raise HTTPException(404, "Not Found")
        try:
            request_data = await self.parse_http_body(request_adapter)
        except json.JSONDecodeError as e:
            raise HTTPException(400, "Unable to parse request body as JSON") from e
        except KeyError as e:
            raise HTTPException(400, "File(s) missing in form data") from e
        result = await self.execute_operation(
            request=request,
            request_adapter=request_adapter,
            request_data=request_data,
            context=context,
            root_value=root_value,
            sub_response=sub_response,
        )
        if isinstance(result, ExperimentalIncrementalExecutionResults):
            incremental = result

            async def parts() -> AsyncGenerator[object, None]:
                process = self._process_stream_result
                pending: list[Any] = []
                part, pending = await process(request, incremental.initial_result, pending)
                yield part
                async for value in incremental.subsequent_results:
                    part, pending = await process(request, value, pending)
                    yield part

            transport = self.multipart_transport_class()
            stream = transport.stream(parts, self.encode_json_string)
            return await self.create_streaming_response(
                request, stream, sub_response, headers=transport.headers
            )
        results = result if isinstance(result, list) else [result]
        answers = []
        for each in results:
            answer = await self.process_result(request=request, result=each)
            if each.errors:
                self._handle_errors(each.errors, answer)
            answers.append(answer)
        response_data = answers if isinstance(result, list) else answers[0]
        return self.create_response(response_data=response_data, sub_response=sub_response)


class StreamPartsHook:
    """Strawberry's HTTP view formats each part of an incremental (``@defer``/``@stream``)
    response in its private ``_process_stream_result``; a view with this mixin (before the
    view class) is asked first, through :meth:`stream_part` (None: Strawberry's own part).
    Not in :data:`REACHES` (that would fence every method the gateway's view overrides):
    ``tests/unit/test_upstream_fences.py`` checks the one private method it replaces."""

    #: What this hook replaces, as ``REACHES`` would list it.
    REPLACES = (AsyncBaseHTTPView, "_process_stream_result", "(self, request, value, all_pending)")

    async def stream_part(
        self, request: Any, value: Any, all_pending: list[Any]
    ) -> tuple[Any, list[Any]] | None:
        return None

    async def _process_stream_result(self, request: Any, value: Any, all_pending: list[Any]) -> Any:
        part = await self.stream_part(request, value, all_pending)
        if part is not None:
            return part
        return await super()._process_stream_result(request, value, all_pending)  # type: ignore[misc]


class KnownDocuments:
    """Strawberry's ``Schema.execute``, with a lane for a document the schema has run before.

    A document text (with its operation name) that parsed, stayed within the token limit
    and validated is remembered with its parsed document (at most ``known_documents`` of
    them, the least recently used forgotten first). When it comes again, the operation
    starts with that document, without the extensions whose only work is to parse it (the
    ``parse_only`` classes: the parser cache, the token limit); everything else runs as
    Strawberry runs it (the operation hooks, the operation's type checked against the ones
    allowed, the validation stage with the cost of these variables, execution, results).
    A schema built with ``known_documents=0``, or with schema directives, runs Strawberry's
    own ``execute``.

    Not in :data:`REACHES` (it replaces a documented method): ``REPLACES`` names it by its
    source's fingerprint, so an upgrade that changes Strawberry's ``execute`` fails the
    fence test instead of running an outdated copy."""

    #: What this lane replaces, as ``REACHES`` would list it.
    REPLACES = (strawberry.Schema, "execute", "source 8d00ea4ce31a")

    def __init__(
        self: Any,
        *args: Any,
        known_documents: int = 0,
        parse_only: tuple[type, ...] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        # Strawberry adds its directives' extension to every operation's list: no lane then.
        self._known_limit = 0 if self.directives else known_documents
        self._known: OrderedDict[tuple[str, str | None], DocumentNode] = OrderedDict()
        # The extension factories of a known document's operation, told by what they make.
        self._lane_factories = [
            factory
            for factory in self.extensions
            if not isinstance(factory if isinstance(factory, SchemaExtension) else factory(), parse_only)
        ]

    def _lane_extensions(self) -> list[Any]:
        return [
            factory if isinstance(factory, SchemaExtension) else factory() for factory in self._lane_factories
        ]

    def _learn(self, key: tuple[str, str | None], document: DocumentNode) -> None:
        if len(self._known) >= self._known_limit:
            self._known.popitem(last=False)
        self._known[key] = document

    async def execute(
        self: Any,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> StrawberryExecutionResult:
        handle: Callable[..., Awaitable[StrawberryExecutionResult]] = self._handle_execution_result
        if allowed_operation_types is None:
            allowed_operation_types = DEFAULT_ALLOWED_OPERATION_TYPES
        # Documents are known by text and operation name; a client may send a name of any
        # JSON type, which Strawberry's own path refuses as it always did.
        key = (
            (query, operation_name)
            if self._known_limit
            and type(query) is str
            and (operation_name is None or type(operation_name) is str)
            else None
        )
        known = self._known.get(key) if key is not None else None

        execution_context = self._create_execution_context(
            query=query,
            allowed_operation_types=allowed_operation_types,
            variable_values=variable_values,
            context_value=context_value,
            root_value=root_value,
            operation_name=operation_name,
            operation_extensions=operation_extensions,
        )
        if known is None:
            extensions = self.get_extensions()
        else:
            self._known.move_to_end(key)
            execution_context.graphql_document = known  # Strawberry's parse leaves it as it is
            extensions = self._lane_extensions()
        # TODO (#3571): remove this when we implement execution context as parameter.
        for extension in extensions:
            extension.execution_context = execution_context

        extensions_runner = self.create_extensions_runner(execution_context, extensions)
        middleware_manager = self._get_middleware_manager(extensions)

        execute_function = self._get_execute_function()

        custom_context_kwargs = self._get_custom_context_kwargs(operation_extensions)

        try:
            async with extensions_runner.operation():
                # Note: In graphql-core the schema would be validated here but in
                # Strawberry we are validating it at initialisation time instead

                if errors := await self._prepare_operation_async(execution_context, extensions_runner):
                    return await handle(
                        execution_context,
                        errors,
                        extensions_runner,
                    )

                assert execution_context.graphql_document
                if key is not None and known is None:
                    self._learn(key, execution_context.graphql_document)
                result = await self._execute_operation(
                    execution_context,
                    extensions_runner,
                    middleware_manager,
                    execute_function,
                    custom_context_kwargs,
                )

        except (
            MissingQueryError,
            CannotGetOperationTypeError,
            InvalidOperationTypeError,
        ):
            raise
        except Exception as exc:
            return await handle(
                execution_context,
                PreExecutionError(data=None, errors=[strawberry_coerce_error(exc)]),
                extensions_runner,
            )
        # return results after all the operation completed.
        return await handle(execution_context, result, extensions_runner, skip_process_errors=True)
