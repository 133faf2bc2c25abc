"""Query limits checked before the standard validation rules, as ``QUERY_TOO_COMPLEX``.

Token limits are the parser's (``MaxTokensLimiter``). Everything else a
document may ask for (fragments, depth, aliases, introspection shape, cost) is
measured by one linear walk (:mod:`gateway.graph.cost`) *before* graphql-core's
rules run: a document over a limit never reaches them, so rules whose work
grows faster than the document (``OverlappingFieldsCanBeMergedRule`` compares
fields pairwise) only ever see documents of bounded expanded size. Page sizes
and the total number of list items are checked again at execution time, where
the resolvers know what they fetch.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import DocumentNode, GraphQLError, GraphQLSchema
from strawberry.extensions import SchemaExtension

from gateway.graph.cost import INTROSPECTION_MAX_DEPTH, INTROSPECTION_MAX_LISTS, Analysis, analyse
from gateway.graph.executor_internals import graphql_schema, validate_document
from gateway.settings import Settings
from gateway.tracing import annotate


@dataclass(frozen=True)
class QueryLimits:
    max_depth: int
    max_aliases: int
    max_fragments: int
    max_cost: int

    @classmethod
    def of(cls, settings: Settings) -> QueryLimits:
        return cls(settings.max_depth, settings.max_aliases, settings.max_fragments, settings.max_cost)


def too_complex(message: str, **extensions: Any) -> GraphQLError:
    return GraphQLError(message, extensions={"code": "QUERY_TOO_COMPLEX", **extensions})


def cost_exceeded(cost: int, limit: int) -> GraphQLError:
    return too_complex(f"This request costs {cost}, more than the limit of {limit}.", cost=cost, limit=limit)


def violations(analysis: Analysis, limits: QueryLimits) -> list[GraphQLError]:
    errors: list[GraphQLError] = []
    if analysis.depth > limits.max_depth:
        errors.append(too_complex(f"Query depth {analysis.depth} exceeds the limit of {limits.max_depth}."))
    if analysis.introspection_depth > INTROSPECTION_MAX_DEPTH:
        errors.append(
            too_complex(
                f"Introspection depth {analysis.introspection_depth} exceeds the limit of "
                f"{INTROSPECTION_MAX_DEPTH}."
            )
        )
    if analysis.introspection_lists > INTROSPECTION_MAX_LISTS:
        errors.append(
            too_complex(
                f"Introspection nests {analysis.introspection_lists} lists; at most "
                f"{INTROSPECTION_MAX_LISTS} are allowed."
            )
        )
    if analysis.aliases > limits.max_aliases:
        errors.append(too_complex(f"{analysis.aliases} aliases exceed the limit of {limits.max_aliases}."))
    if analysis.cost > limits.max_cost:
        errors.append(cost_exceeded(analysis.cost, limits.max_cost))
    return errors


def check(
    schema: GraphQLSchema,
    document: DocumentNode,
    limits: QueryLimits,
    variables: Mapping[str, Any] | None = None,
    operation_name: str | None = None,
    budget: int | None = None,
) -> tuple[Analysis | None, list[GraphQLError]]:
    """The document's measures and the limits it breaks (none: it may be validated).
    ``budget`` is the cost the request may still spend (a batch's remainder); by
    default the whole limit."""
    fragments = sum(1 for d in document.definitions if d.kind == "fragment_definition")
    if fragments > limits.max_fragments:
        message = f"{fragments} fragments exceed the limit of {limits.max_fragments}."
        return None, [too_complex(message)]
    spend = limits.max_cost if budget is None else budget
    analysis = analyse(schema, document, variables, operation_name, budget=spend)
    return analysis, violations(analysis, limits)


def _operation_name(execution_context: Any) -> str | None:
    try:
        name = execution_context.operation_name
    except Exception:
        return None
    return name if isinstance(name, str) else None


_ABSENT = object()


class _Checked:
    """What one document text has been found to be: its measures under the variable
    values seen so far, and its validation errors once validated."""

    __slots__ = ("analyses", "validation")

    #: Distinct variable values remembered per document (``first: $n`` takes few).
    MAX_VALUES = 64

    def __init__(self) -> None:
        self.analyses: dict[tuple[Any, ...], Analysis] = {}
        self.validation: list[GraphQLError] | None = None

    def analysis(
        self,
        schema: GraphQLSchema,
        document: DocumentNode,
        variables: Mapping[str, Any] | None,
        operation_name: str | None,
        budget: int,
    ) -> Analysis:
        some = next(iter(self.analyses.values()), None)
        key: tuple[Any, ...] | None = None
        if some is not None:
            values = variables or {}
            key = tuple(values.get(name, _ABSENT) for name in sorted(some.variables))
            try:
                found = self.analyses.get(key)
            except TypeError:  # an unhashable value (a list where an Int goes): not remembered
                return analyse(schema, document, variables, operation_name, budget)
            if found is not None:
                return found
        result = analyse(schema, document, variables, operation_name, budget)
        if key is None:
            values = variables or {}
            key = tuple(values.get(name, _ABSENT) for name in sorted(result.variables))
        try:
            if len(self.analyses) >= self.MAX_VALUES:
                self.analyses.clear()
            self.analyses[key] = result
        except TypeError:
            pass
        return result


class _CheckedDocuments:
    """A bounded LRU of :class:`_Checked`, keyed by the document's text and operation name.

    Keyed by text, not by the parsed ``DocumentNode``: AST nodes are frozen
    dataclasses whose hash walks the whole tree on every lookup, which is what
    Strawberry's ``ValidationCache`` pays per request. A text always parses to the
    same document (the parser options are fixed per schema), so the text decides.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self.entries: OrderedDict[tuple[str, str | None, tuple[type, ...]], _Checked] = OrderedDict()

    def get(self, query: str, operation_name: str | None, rules: tuple[type, ...]) -> _Checked:
        key = (query, operation_name, rules)
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = _Checked()
            if len(self.entries) > self.maxsize:
                self.entries.popitem(last=False)
        else:
            self.entries.move_to_end(key)
        return entry


def limited_validation(limits: QueryLimits, cache_size: int = 1000) -> type[SchemaExtension]:
    """Cached validation, run only on documents within ``limits``.

    Replaces ``ValidationCache`` in the extension list: a document text seen
    before costs no walk and no validation (its measures are remembered per value
    of the variables they depend on, the ``first`` of connections), and validation
    that has already produced errors is not run again by Strawberry.
    """
    checked = _CheckedDocuments(cache_size)

    class LimitedValidation(SchemaExtension):
        analysis: Analysis | None = None

        def on_validate(self) -> Iterator[None]:
            context = self.execution_context
            document = context.graphql_document
            query = context.query
            if document is None or query is None:
                yield
                return
            schema = graphql_schema(context.schema)
            fragments = sum(1 for d in document.definitions if d.kind == "fragment_definition")
            if fragments > limits.max_fragments:
                message = f"{fragments} fragments exceed the limit of {limits.max_fragments}."
                context.pre_execution_errors = [too_complex(message)]
                yield
                return
            operation_name = _operation_name(context)
            rules = tuple(context.validation_rules)
            entry = checked.get(query, operation_name, rules)
            self.analysis = entry.analysis(
                schema, document, context.variables, operation_name, limits.max_cost
            )
            if getattr(getattr(context.context, "services", None), "tracer", None) is not None:
                annotate("graphql.operation.cost", self.analysis.cost)
            errors = violations(self.analysis, limits)
            if errors:
                context.pre_execution_errors = errors
                yield
                return
            if entry.validation is None:
                entry.validation = validate_document(schema, document, rules)
            context.pre_execution_errors = entry.validation
            yield

        def get_results(self) -> dict[str, Any]:
            settings = getattr(self.execution_context.context, "settings", None)
            if self.analysis is None or not getattr(settings, "query_metrics", False):
                return {}
            return {"cost": {"total": self.analysis.cost, "limit": limits.max_cost}}

    return LimitedValidation
