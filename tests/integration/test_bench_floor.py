"""The benchmarks' floor (``bench/floor.py``): the same reads as the gateway over HTTP without
GraphQL. What it measures is only a floor if it does the gateway's work: the same ``data``, byte
for byte, from the same number of statements; and a document it does not know is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import aiohttp
import orjson
import pytest
from aiohttp import web

from bench.bench_blog import FRONT_PAGE
from bench.bench_mail import MAILBOX
from bench.bench_messenger import CONVERSATION
from bench.client import GraphQLClient
from bench.floor import REFUSED
from bench.floor import app as floor_app
from gateway.settings import Settings
from tests.conftest import ServerFactory
from tests.support import mail_helpers, messenger
from tests.support.blog import comment, publish
from tests.support.client import Api


@pytest.fixture
async def floor_url(base_settings: Settings) -> AsyncIterator[str]:
    runner = web.AppRunner(floor_app(replace(base_settings, query_metrics=True)))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}/graphql"
    await runner.cleanup()


@pytest.fixture
async def floor(floor_url: str) -> AsyncIterator[GraphQLClient]:
    client = GraphQLClient(floor_url)
    yield client
    client.close()


async def test_the_floor_answers_the_gateways_data_from_as_many_statements(
    api: Api, make_server: ServerFactory, floor: GraphQLClient
) -> None:
    author = await api.sign_up("floor")
    for _ in range(3):
        post = await publish(api, author.token)
    await comment(api, post["slug"])
    measured, _ = await make_server(query_metrics=True)
    gateway = GraphQLClient(measured.url)
    user_by_login = f'{{ user(login: "{author.login}") {{ login firstname }} }}'
    try:
        for query in (FRONT_PAGE, user_by_login, '{ user(login: "nobody-at-all") { login firstname } }'):
            _, before = await gateway.post(query)
            status, body = await floor.post(query)
            _, after = await gateway.post(query)
            assert before == after  # nothing changed the reads meanwhile
            assert status == 200
            assert orjson.dumps(body["data"]) == orjson.dumps(before["data"])
            assert body["extensions"]["cql"]["statements"] == before["extensions"]["cql"]["statements"]
    finally:
        gateway.close()
    assert before["data"] == {"user": None}
    assert body["extensions"]["cql"]["statements"] == 1


async def test_the_floor_answers_a_conversation_and_a_mailbox_as_the_gateway_does(
    api: Api, make_server: ServerFactory, floor: GraphQLClient
) -> None:
    owner, partner, sender = [await api.sign_up(prefix) for prefix in ("fl-own", "fl-par", "fl-snd")]
    for n in range(3):
        await messenger.send(api, owner, partner.login, f"out {n}")
        await messenger.send(api, partner, owner.login, f"in {n}")
    for n in range(4):
        await mail_helpers.send(api, sender, [owner.login], subject=f"Hello {n}")
    measured, _ = await make_server(query_metrics=True)
    gateway = GraphQLClient(measured.url)
    try:
        for query, variables in ((CONVERSATION, {"with": partner.login}), (MAILBOX, None)):
            _, before = await gateway.post(query, variables, owner.token)
            status, body = await floor.post(query, variables, owner.token)
            assert status == 200
            assert orjson.dumps(body["data"]) == orjson.dumps(before["data"])
            assert body["extensions"]["cql"]["statements"] == before["extensions"]["cql"]["statements"]
    finally:
        gateway.close()
    assert len(before["data"]["me"]["folder"]["emails"]["edges"]) == 4
    _, conversation = await floor.post(CONVERSATION, {"with": partner.login}, owner.token)
    assert len(conversation["data"]["me"]["conversation"]["messages"]["edges"]) == 6
    assert conversation["data"]["me"]["conversation"]["unreadCount"] == 3


async def test_the_floor_refuses_what_it_does_not_serve(floor_url: str) -> None:
    async with aiohttp.ClientSession() as http:
        # Documents it does not know, and those of a viewer without a session.
        for query in ("{ __typename }", FRONT_PAGE + " ", '{ user(login: "a") { login } }', MAILBOX):
            async with http.post(floor_url, json={"query": query}) as response:
                assert response.status == 400
                assert await response.text() == REFUSED
