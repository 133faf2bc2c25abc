"""Lean resolvers (``executor_internals.lean_resolver``, installed by
``plain_fields.install_lean_resolvers``): the fields that take them answer exactly as through
Strawberry's resolvers, data, errors and their order included, and the fields that need a
layer of Strawberry's resolver keep it."""

from __future__ import annotations

import asyncio
import enum
from typing import Annotated, Any

import strawberry
from graphql import GraphQLObjectType
from strawberry.permission import BasePermission
from strawberry.relay import GlobalID
from strawberry.scalars import Base64
from strawberry.types import Info

from gateway.graph.executor_internals import graphql_schema
from gateway.graph.plain_fields import install_lean_resolvers
from gateway.schema import build_schema


@strawberry.enum
class Size(enum.Enum):
    SMALL = "s"
    LARGE = "l"


@strawberry.input
class Filter:
    word: str


class Never(BasePermission):
    message = "not allowed"

    def has_permission(self, source: Any, info: Info, **kwargs: Any) -> bool:
        return False


@strawberry.type
class Item:
    name: str

    @strawberry.field
    def echo(self, text: str | None = None, times: int = 2) -> str:
        return f"{self.name}:{text}:{times}"

    @strawberry.field
    async def later(self, info: Info, delay: float = 0.0) -> str:
        await asyncio.sleep(delay)
        return f"{self.name}:{info.field_name}:{info.python_name}:{info.path.key}"

    @strawberry.field
    def parent_name(self, root: Any) -> str:
        return f"{root.name}/{self.name}"

    @strawberry.field
    def fails(self, why: str = "boom") -> str | None:
        raise ValueError(why)

    @strawberry.field
    async def fails_later(self, why: str = "later") -> str:
        raise ValueError(why)


@strawberry.type
class Query:
    @strawberry.field
    def items(
        self, first: int = 2, prefix: Annotated[str | None, strawberry.argument(name="pre")] = None
    ) -> list[Item]:
        return [Item(name=f"{prefix or 'i'}{n}") for n in range(first)]

    @strawberry.field
    def decoded(self, value: Base64) -> str:
        return f"{type(value).__name__}:{value!r}"

    @strawberry.field
    def node(self, id: GlobalID) -> str:
        return f"{id.type_name}/{id.node_id}"

    @strawberry.field
    def sized(self, size: Size = Size.SMALL) -> str:
        return f"{type(size).__name__}.{size.name}"

    @strawberry.field
    def filtered(self, where: Filter) -> str:
        return f"{type(where).__name__}:{where.word}"

    @strawberry.field
    def maybe(self, value: strawberry.Maybe[str | None] = None) -> str:
        return repr(value)

    @strawberry.field(permission_classes=[Never])  # type: ignore[untyped-decorator]
    def secret(self) -> str:
        return "never"

    @strawberry.field
    def words(self, values: list[str]) -> list[str]:
        return values


def _schemas() -> tuple[strawberry.Schema, strawberry.Schema, int]:
    lean, reference = strawberry.Schema(query=Query), strawberry.Schema(query=Query)
    return lean, reference, install_lean_resolvers(lean)


def _resolver_name(schema: strawberry.Schema, type_name: str, field: str) -> str:
    core = graphql_schema(schema)
    return core.get_type(type_name).fields[field].resolve.__qualname__  # type: ignore[union-attr]


def test_fields_needing_strawberrys_layers_keep_its_resolver() -> None:
    lean, _, given = _schemas()
    leaned = {
        (type_name, field)
        for type_name in ("Query", "Item")
        for field in graphql_schema(lean).get_type(type_name).fields  # type: ignore[union-attr]
        if _resolver_name(lean, type_name, field).startswith("lean_resolver.")
    }
    assert leaned == {
        ("Item", "echo"), ("Item", "later"), ("Item", "parentName"), ("Item", "fails"),
        ("Item", "failsLater"), ("Query", "items"), ("Query", "decoded"),
    }  # fmt: skip
    assert given == len(leaned)
    # GlobalID parses, an enum, an input object and a list convert, Maybe wraps, a permission
    # is a field extension: Strawberry's resolver does each.
    for field in ("node", "sized", "filtered", "maybe", "secret", "words"):
        assert _resolver_name(lean, "Query", field).startswith("GraphQLCoreConverter.from_resolver.")
    # A field without a resolver is read by the plain path, not through any resolver.
    assert _resolver_name(lean, "Item", "name").endswith("_get_basic_result")


DOCUMENTS = [
    "{ items { name echo later parentName } }",
    '{ items(first: 3, pre: "x") { echo(text: null) e2: echo(text: "t", times: 5) later(delay: 0.001) } }',
    "{ items(first: 2) { name fails failsLater echo } }",
    "query($w: Base64!, $n: Int, $t: String) { decoded(value: $w) items(first: $n) { echo(text: $t) } }",
    '{ node(id: "SXRlbTox") sized(size: LARGE) filtered(where: {word: "w"}) maybe(value: null) }',
    '{ words(values: ["a", "b"]) decoded(value: "aGk=") }',
    "{ secret }",
    '{ node(id: "not an id") }',
    '{ items(first: 1) { fails(why: "first") a: failsLater(why: "second") b: fails(why: "third") } }',
]


async def test_lean_and_strawberrys_resolvers_answer_alike() -> None:
    lean, reference, _ = _schemas()
    for document in DOCUMENTS:
        variables = {"w": "aGV5", "n": 2, "t": "v"}
        got = await lean.execute(document, variable_values=variables)
        expected = await reference.execute(document, variable_values=variables)
        assert got.data == expected.data, document
        errors = [e.formatted for e in got.errors or []]
        assert errors == [e.formatted for e in expected.errors or []], document
        # Every document executes: an error is a field's, never one of a document that
        # does not validate (which would compare nothing).
        assert all(error.get("path") for error in errors), errors


def test_the_gateways_fields_with_a_resolver_take_the_lean_one_but_for_input_objects() -> None:
    schema = build_schema(plain_fields=True)
    core = graphql_schema(schema)
    strawberrys = sorted(
        f"{named.name}.{name}"
        for named in core.type_map.values()
        if isinstance(named, GraphQLObjectType) and named is not core.subscription_type
        for name, field in named.fields.items()
        if getattr(field.resolve, "__qualname__", "").startswith(
            "GraphQLCoreConverter.from_resolver.<locals>._"
        )
        and not field.resolve.__qualname__.endswith("_get_basic_result")
    )
    assert strawberrys == [
        "Mutation.addComment", "Mutation.publishPost", "Mutation.sendEmail", "Mutation.signUp",
        "Mutation.updateProfile", "Mutation.uploadContacts",
    ]  # fmt: skip
    assert not any(
        getattr(field.resolve, "__qualname__", "").startswith("lean_resolver.")
        for field in core.subscription_type.fields.values()  # type: ignore[union-attr]
    )
    reference = graphql_schema(build_schema(plain_fields=False))
    assert not any(
        getattr(field.resolve, "__qualname__", "").startswith("lean_resolver.")
        for named in reference.type_map.values()
        if isinstance(named, GraphQLObjectType)
        for field in named.fields.values()
    )
