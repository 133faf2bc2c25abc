"""Batched requests: a JSON array of operations sharing one cost budget.

Before any operation of a batch runs, every operation is parsed and costed;
when their sum is over ``GATEWAY_MAX_COST`` every operation answers
``QUERY_TOO_COMPLEX`` with the batch's total in ``extensions.cost``, and
nothing runs. A batch of more than ``GATEWAY_MAX_BATCH`` operations is refused
the same way. Otherwise each operation runs as if sent alone (its own limits
apply again), all of them concurrently and in one context, so the
execution-time item budget is shared too. Operations of a batch have no order:
a client that needs one mutation's effect before another sends them apart.
Subscriptions need the WebSocket and are refused in a batch with
``BAD_REQUEST``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import strawberry
from graphql import GraphQLError, OperationType, get_operation_ast, parse
from strawberry.http import GraphQLRequestData
from strawberry.types import ExecutionResult

from gateway.graph.executor_internals import graphql_schema
from gateway.graph.limits import QueryLimits, check, cost_exceeded, too_complex

#: Strawberry's own batch ceiling, above which it answers a plain-text 400;
#: ``BatchBudget`` answers every size up to it with coded errors.
BATCH_CEILING = 1_000_000


def _refused(error: GraphQLError) -> ExecutionResult:
    return ExecutionResult(data=None, errors=[error])


if TYPE_CHECKING:
    from strawberry.aiohttp.views import GraphQLView

    _View = GraphQLView[Any, Any]
else:
    _View = object


class BatchBudget(_View):
    """Mixin for Strawberry's aiohttp ``GraphQLView``; put it first in the bases."""

    def __init__(
        self, *args: Any, query_limits: QueryLimits, max_batch: int, max_tokens: int, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.query_limits = query_limits
        self.max_batch = max_batch
        self.max_tokens = max_tokens

    async def execute_operation(
        self,
        request: Any,
        request_adapter: Any,
        request_data: GraphQLRequestData | list[GraphQLRequestData],
        context: Any,
        root_value: Any,
        sub_response: Any,
    ) -> Any:
        if not isinstance(request_data, list):
            return await super().execute_operation(
                request, request_adapter, request_data, context, root_value, sub_response
            )
        if len(request_data) > self.max_batch:
            error = too_complex(
                f"A batch may hold at most {self.max_batch} operations, this one has {len(request_data)}."
            )
            return [_refused(error) for _ in request_data]
        refusals, total = await self._costs(request_data)
        limit = self.query_limits.max_cost
        if total > limit:
            return [_refused(cost_exceeded(total, limit)) for _ in request_data]

        async def run(index: int, data: GraphQLRequestData) -> ExecutionResult:
            refusal = refusals.get(index)
            if refusal is not None:
                return _refused(refusal)
            return await self.execute_single(
                request=request,
                request_adapter=request_adapter,
                sub_response=sub_response,
                context=context,
                root_value=root_value,
                request_data=data,
            )

        return list(await asyncio.gather(*(run(i, d) for i, d in enumerate(request_data))))

    async def _costs(self, batch: list[GraphQLRequestData]) -> tuple[dict[int, GraphQLError], int]:
        """Subscriptions to refuse, by index, and the batch's total cost.

        An operation sent by its persisted-query hash alone is costed as the document
        the hash names. An operation that does not parse or breaks another limit costs nothing
        here: running it alone reports that, before anything executes. Each is
        costed within what the operations before it left of the budget, so a batch
        whose first operations spend it all is refused without measuring the rest.
        """
        assert isinstance(self.schema, strawberry.Schema)
        schema = graphql_schema(self.schema)
        refusals: dict[int, GraphQLError] = {}
        total = 0
        for index, data in enumerate(batch):
            query = data.query if isinstance(data.query, str) else await self._persisted(data)
            if query is None:
                continue
            try:
                document = parse(query, max_tokens=self.max_tokens)
            except GraphQLError:
                continue
            operation = get_operation_ast(document, data.operation_name)
            if operation is not None and operation.operation == OperationType.SUBSCRIPTION:
                refusals[index] = GraphQLError(
                    "Subscriptions cannot be batched; use the WebSocket on /graphql.",
                    extensions={"code": "BAD_REQUEST"},
                )
                continue
            variables = data.variables if isinstance(data.variables, dict) else None
            remaining = self.query_limits.max_cost - total
            name = data.operation_name
            analysis, _ = check(schema, document, self.query_limits, variables, name, remaining)
            if analysis is not None:
                total += analysis.cost
                if total > self.query_limits.max_cost:
                    break
        return refusals, total

    async def _persisted(self, data: GraphQLRequestData) -> str | None:
        """The registered document a hash-only operation names; None for any other."""
        persisted = getattr(self, "persisted_queries", None)
        if persisted is None or data.query is not None:
            return None
        document = await persisted.document(None, data.extensions)
        return document if isinstance(document, str) else None
