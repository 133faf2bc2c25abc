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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import DocumentNode, GraphQLError, GraphQLSchema
from strawberry.extensions import ValidationCache

from gateway.graph.cost import INTROSPECTION_MAX_DEPTH, INTROSPECTION_MAX_LISTS, Analysis, analyse
from gateway.settings import Settings


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
    return too_complex(
        f"This request costs {cost}, more than the limit of {limit}.", cost=cost, limit=limit
    )


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
) -> tuple[Analysis | None, list[GraphQLError]]:
    """The document's measures and the limits it breaks (none: it may be validated)."""
    fragments = sum(1 for d in document.definitions if d.kind == "fragment_definition")
    if fragments > limits.max_fragments:
        message = f"{fragments} fragments exceed the limit of {limits.max_fragments}."
        return None, [too_complex(message)]
    analysis = analyse(schema, document, variables, operation_name)
    return analysis, violations(analysis, limits)


def _operation_name(execution_context: Any) -> str | None:
    try:
        name = execution_context.operation_name
    except Exception:
        return None
    return name if isinstance(name, str) else None


def limited_validation(limits: QueryLimits, cache_size: int = 1000) -> type[ValidationCache]:
    """Strawberry's cached validation, run only on documents within ``limits``.

    Replaces ``ValidationCache`` in the extension list: validation that has
    already produced errors is not run again by Strawberry.
    """

    class LimitedValidation(ValidationCache):
        analysis: Analysis | None = None

        def __init__(self) -> None:
            super().__init__(maxsize=cache_size)

        def on_validate(self) -> Iterator[None]:
            context = self.execution_context
            document = context.graphql_document
            if document is not None:
                self.analysis, errors = check(
                    context.schema._schema,
                    document,
                    limits,
                    context.variables,
                    _operation_name(context),
                )
                if errors:
                    context.pre_execution_errors = errors
                    yield
                    return
            yield from super().on_validate()

        def get_results(self) -> dict[str, Any]:
            settings = getattr(self.execution_context.context, "settings", None)
            if self.analysis is None or not getattr(settings, "query_metrics", False):
                return {}
            return {"cost": {"total": self.analysis.cost, "limit": limits.max_cost}}

    return LimitedValidation
