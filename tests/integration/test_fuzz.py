"""Schema-driven fuzzing of ``/graphql``: every query and mutation field, signed in and anonymous.

``hypothesis-graphql`` builds documents from ``schema.graphql``, field by
field (so every root field is covered by construction), with arbitrary
argument values: empty and non-ASCII strings, nulls, huge and negative
numbers, nested selections. Inside ``scripts/test`` generation is derandomized, so a run is reproducible;
``scripts/fuzz`` (``FUZZ_MINUTES``) draws fresh documents round after round for
its share of the time. The examples are collected first and then sent over HTTP
to the running test app. Whatever the document, the gateway must answer below
500, never ``INTERNAL_SERVER_ERROR``, give every error an ``extensions.code``,
answer within ``HANG_GUARD`` seconds, and write no traceback or error to its log.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import aiohttp
import graphql
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis_graphql import Mode, from_schema, nodes

from tests.support.client import Api
from tests.support.fuzz.budget import HANG_GUARD, Budget
from tests.support.fuzz.problems import problems_of
from tests.support.fuzz.watch import watching

SCHEMA = (Path(__file__).resolve().parents[2] / "schema.graphql").read_text()
#: Documents generated per root field: valid ones, and ones with arguments of the wrong
#: type or missing (``Mode.NEGATIVE``); with 25 fields, signed in and anonymous, about 800 requests.
EXAMPLES_PER_FIELD = {Mode.POSITIVE: 12, Mode.NEGATIVE: 6}

#: hypothesis-graphql's own strategies use ``random`` internally.
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")

CUSTOM_SCALARS: dict[str, st.SearchStrategy[graphql.ValueNode]] = {
    "DateTime": st.one_of(
        st.datetimes(timezones=st.just(UTC)).map(lambda d: nodes.String(d.isoformat())),
        st.text(max_size=30).map(nodes.String),
    ),
    # Files only come in multipart requests; over JSON an Upload can only be null.
    "Upload": st.just(graphql.NullValueNode()),
}


def _root_fields() -> list[tuple[str, str]]:
    schema = graphql.build_schema(SCHEMA)
    assert schema.query_type is not None and schema.mutation_type is not None
    fields = [("query", name) for name in schema.query_type.fields]
    mutations = sorted(schema.mutation_type.fields, key=lambda name: name == "signOut")
    return fields + [("mutation", name) for name in mutations]


def generate(field: str, count: int, mode: Mode, seed: int | None = None) -> list[str]:
    """``count`` documents (at most) selecting ``field``: the same ones on every run, or
    others for each ``seed``."""
    make: Callable[..., st.SearchStrategy[Any]] = from_schema
    strategy = make(SCHEMA, fields=[field], custom_scalars=CUSTOM_SCALARS, mode=mode)
    documents: list[str] = []

    @settings(
        max_examples=count,
        derandomize=seed is None,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(document: str) -> None:
        if document not in documents:
            documents.append(document)

    if seed is not None:
        collect = hypothesis_seed(seed)(collect)

    try:
        collect()
    except InvalidArgument:
        if mode is Mode.POSITIVE:
            raise
        return []  # a field with no argument to get wrong
    return documents[:count]


async def test_fuzzed_documents_never_fail_the_server(api: Api) -> None:
    account = await api.sign_up("fuzz")
    other = await api.sign_up("fuzzb")
    covered: set[str] = set()
    sent = 0
    failures: list[str] = []
    codes: Counter[str] = Counter()
    budget = Budget(brief=1)
    rounds = 0
    with watching() as log:
        async with aiohttp.ClientSession() as http:
            while budget.more() and len(failures) < 20:
                seed = budget.seed + rounds if budget.long else None
                for kind, field in _root_fields():
                    documents = [
                        d for mode, n in EXAMPLES_PER_FIELD.items() for d in generate(field, n, mode, seed)
                    ]
                    assert documents, field
                    covered.add(f"{kind} {field}")
                    for document in documents:
                        for token in (account.token, None):
                            headers = {"Authorization": f"Bearer {token}"} if token else {}
                            payload = {"query": document}
                            who = "signed in" if token else "anonymous"
                            try:
                                async with (
                                    asyncio.timeout(HANG_GUARD),
                                    http.post(api.url, json=payload, headers=headers) as response,
                                ):
                                    status = response.status
                                    body = await response.json(content_type=None)
                            except TimeoutError:
                                failures.append(f"{field} ({who}): no answer within the guard\n{document}")
                                continue
                            sent += 1
                            codes.update(
                                e.get("extensions", {}).get("code", "-") for e in body.get("errors") or []
                            )
                            failures += [
                                f"{field} ({who}): {p}\n{document}" for p in problems_of(status, body)
                            ]
                            failures += [f"{field} ({who}): log {line}\n{document}" for line in log.take()]
                rounds += 1
    print(f"\nfuzz: {sent} requests, {len(covered)} root fields, {rounds} rounds, {len(failures)} failures")
    print(f"fuzz: error codes seen {dict(codes.most_common())}")
    assert len(covered) == len(_root_fields())
    assert not failures, "\n\n".join(failures[:10])
    assert other.login  # a second user exists for operations that name someone else
