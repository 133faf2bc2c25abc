"""``GET /metrics`` after known traffic, and the access line of each operation.

Every test reads the numbers of a gateway of its own (``make_server``: each app
has its own registry), so they are exact counts, not deltas.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from gql import GraphQLRequest

from devnode.redis import RedisServer
from gateway.server.logs import JsonFormatter, configure_logging, log_format
from gateway.server.metrics import ANONYMOUS, OTHER, OperationNames
from gateway.settings import Settings, SettingsError
from tests.conftest import ServerFactory
from tests.support.client import Account, Api
from tests.support.messenger import SEND
from tests.support.metrics import Samples, scrape, value
from tests.support.processes import start_gateway
from tests.support.redis_helpers import WAIT, private_redis

__all__ = ["private_redis"]

ME = "query Me { me { user { login } } }"
BAD_SEND = 'mutation BadSend { sendMessage(to: "", content: "hi") { id } }'
INBOX = "subscription Inbox { messageReceived { id } }"


async def until(api: Api, name: str, expected: float, **labels: str) -> Samples:
    """The samples once ``name`` shows ``expected`` (a WebSocket closes after its client left)."""
    samples: Samples = {}
    for _ in range(WAIT * 20):
        samples = await scrape(api)
        if value(samples, name, **labels) == expected:
            return samples
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name}{labels} never became {expected}: {value(samples, name, **labels)}")


async def test_operations_count_by_name_and_outcome_with_their_statements(make_server: ServerFactory) -> None:
    api, _ = await make_server()
    account = await api.sign_up("metrics")
    statements = 0
    for _ in range(3):
        response = await api.call(ME, token=account.token)
        assert response.data == {"me": {"user": {"login": account.login}}}
        statements += response.statements
    failed = await api.call(BAD_SEND, token=account.token)
    assert failed.codes == ["BAD_USER_INPUT"]
    statements += failed.statements

    samples = await scrape(api)

    assert value(samples, "gateway_requests_total", operation="Me", outcome="ok") == 3
    assert value(samples, "gateway_requests_total", operation="BadSend", outcome="BAD_USER_INPUT") == 1
    # signUp's mutation has no name.
    assert value(samples, "gateway_requests_total", operation=ANONYMOUS, outcome="ok") == 1
    assert value(samples, "gateway_request_duration_seconds_count", operation="Me") == 3
    assert value(samples, "gateway_request_duration_seconds_count", operation="BadSend") == 1
    assert value(samples, "gateway_request_cql_statements_count") == 5
    sign_up_statements = value(samples, "gateway_request_cql_statements_sum") - statements
    assert sign_up_statements > 0
    assert value(samples, "gateway_cql_statements_total") == statements + sign_up_statements
    assert value(samples, "gateway_lwt_retries_total") == 0
    assert value(samples, "gateway_http_requests_total", route="/graphql", status="200") == 5
    assert value(samples, "gateway_broker_up") == 1


async def test_statements_are_counted_per_operation_of_a_batch(make_server: ServerFactory) -> None:
    api, _ = await make_server()
    account = await api.sign_up("metricsb")
    alone = (await api.call(ME, token=account.token)).statements
    before = value(await scrape(api), "gateway_cql_statements_total")
    batch = [{"query": ME}, {"query": ME}]
    async with (
        aiohttp.ClientSession() as http,
        http.post(api.url, json=batch, headers={"Authorization": f"Bearer {account.token}"}) as r,
    ):
        assert r.status == 200
        items = await r.json()
    assert [item["data"] for item in items] == [{"me": {"user": {"login": account.login}}}] * 2
    # The operations of a batch share one request (its session, which the process knows
    # since the sign-up, and its loaders: one read of the user serves both), whose running
    # total each reports in extensions.cql.
    cumulative = [item["extensions"]["cql"]["statements"] for item in items]
    assert alone == 1
    assert cumulative == [1, 1]

    samples = await scrape(api)
    assert value(samples, "gateway_requests_total", operation="Me", outcome="ok") == 3
    assert value(samples, "gateway_cql_statements_total") - before == max(cumulative)


async def test_subscriptions_and_websockets_are_gauged_while_open(make_server: ServerFactory) -> None:
    api, _ = await make_server()
    reader, writer = await api.sign_up("metricsr"), await api.sign_up("metricsw")
    received: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def listen() -> None:
        async with api.websocket(reader.token) as session:
            async for result in session.subscribe(GraphQLRequest(INBOX)):
                await received.put(result)

    task = asyncio.create_task(listen())
    try:
        await until(api, "gateway_active_subscriptions", 1)
        samples = await until(api, "gateway_websocket_connections", 1)
        assert value(samples, "gateway_requests_total", operation="Inbox", outcome="ok") == 0
        await api.ok(SEND, {"to": reader.login, "content": "hello", "key": None}, token=writer.token)
        await asyncio.wait_for(received.get(), WAIT)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    await until(api, "gateway_active_subscriptions", 0)
    await until(api, "gateway_websocket_connections", 0)
    # The upgrade's status is recorded when its handler returns, just after the socket closed.
    samples = await until(api, "gateway_http_requests_total", 1, route="/graphql", status="101")
    # A subscription counts once, when it ends; its lifetime is not a latency.
    assert value(samples, "gateway_requests_total", operation="Inbox", outcome="ok") == 1
    assert value(samples, "gateway_request_duration_seconds_count", operation="Inbox") == 0
    assert value(samples, "gateway_http_requests_total", route="/graphql", status="101") == 1


async def test_an_unreachable_broker_shows_in_the_broker_gauge(make_server: ServerFactory) -> None:
    api, _ = await make_server(broker_url="redis://127.0.0.1:1/0")
    samples = await scrape(api)
    assert value(samples, "gateway_broker_up") == 0
    shards = ("gateway_broker_shards_unreachable", "gateway_broker_shards")
    assert [value(samples, name) for name in shards] == [1, 1]


async def test_deliveries_show_their_lag_sockets_their_presence_and_the_driver_its_hosts(
    make_server: ServerFactory,
) -> None:
    """Without a broker: no shard; each event a subscription takes is one observation of the
    delivery lag; a user with a socket open is one presence claim; the Cassandra hosts are
    the driver's (the test node: one, up)."""
    api, _ = await make_server()
    samples = await scrape(api)
    assert (value(samples, "gateway_broker_up"), value(samples, "gateway_broker_shards")) == (1, 0)
    assert value(samples, "gateway_cassandra_hosts_up") == value(samples, "gateway_cassandra_hosts") >= 1
    assert value(samples, "gateway_presence_claims") == 0
    reader, writer = await api.sign_up("lagr"), await api.sign_up("lagw")
    received: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def listen() -> None:
        async with api.websocket(reader.token) as session:
            async for result in session.subscribe(GraphQLRequest(INBOX)):
                await received.put(result)

    task = asyncio.create_task(listen())
    try:
        await until(api, "gateway_active_subscriptions", 1)
        await until(api, "gateway_presence_claims", 1)
        lagged = value(await scrape(api), "gateway_subscription_delivery_lag_seconds_count")
        for n in range(3):
            await api.ok(SEND, {"to": reader.login, "content": f"hello {n}", "key": None}, token=writer.token)
            await asyncio.wait_for(received.get(), WAIT)
        samples = await scrape(api)
        assert value(samples, "gateway_subscription_delivery_lag_seconds_count") - lagged == 3
        top = value(samples, "gateway_subscription_delivery_lag_seconds_bucket", le="+Inf")
        assert top == value(samples, "gateway_subscription_delivery_lag_seconds_count")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    await until(api, "gateway_presence_claims", 0)


def test_operation_names_are_bounded() -> None:
    names = OperationNames(limit=2)
    assert [names.label(n) for n in ("A", "B", "C", "A", None, "", "not a name")] == [
        "A", "B", OTHER, "A", ANONYMOUS, ANONYMOUS, OTHER,
    ]  # fmt: skip


@contextlib.contextmanager
def access_lines() -> Iterator[list[dict[str, Any]]]:
    """The ``gateway.access`` lines logged meanwhile, as the JSON format writes them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("gateway.access")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    lines: list[dict[str, Any]] = []
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        lines.extend(json.loads(line) for line in stream.getvalue().splitlines())


async def test_each_operation_writes_one_json_access_line(api: Api) -> None:
    account: Account = await api.sign_up("metricsl")
    with access_lines() as lines:
        response = await api.call(ME, token=account.token)
        failed = await api.call(BAD_SEND, token=account.token)
        anonymous = await api.call('{ user(login: "nobody-x") { login } }')
    assert response.errors == [] and failed.codes == ["BAD_USER_INPUT"] and anonymous.errors == []

    assert [line["operation"] for line in lines] == ["Me", "BadSend", None]
    me, bad, anon = lines
    fields = ("level", "logger", "user", "statements", "outcome", "operationType")
    assert {key: me[key] for key in fields} == {
        "level": "INFO",
        "logger": "gateway.access",
        "user": account.login,
        "statements": response.statements,
        "outcome": "ok",
        "operationType": "query",
    }
    assert isinstance(me["durationMs"], float) and me["durationMs"] >= 0
    assert len(me["requestId"]) == 32 and me["time"].endswith("+00:00")
    assert (bad["outcome"], bad["operationType"], bad["statements"]) == (
        "BAD_USER_INPUT", "mutation", failed.statements,
    )  # fmt: skip
    assert (anon["user"], anon["outcome"], anon["statements"]) == (None, "ok", anonymous.statements)
    assert len({me["requestId"], bad["requestId"], anon["requestId"]}) == 3


async def test_one_scrape_sees_every_worker(
    base_settings: Settings, server: Any, private_redis: RedisServer, tmp_path: Path
) -> None:
    """``--workers 2``: each request lands on either worker, and every scrape (on either
    worker, over fresh connections) counts all of them."""
    gateway = await start_gateway(
        base_settings, tmp_path, "--workers", "2", GATEWAY_BROKER_URL=private_redis.url
    )
    try:
        api = gateway.api
        # The gateway answers once one worker is ready; wait until both answer as ready.
        pids: set[int] = set()
        for _ in range(400):
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
                async with http.get(f"{api.base_url}/readyz") as r:
                    if r.status == 200:
                        pids.add((await r.json())["pid"])
            if len(pids) == 2:
                break
            await asyncio.sleep(0.05)
        assert len(pids) == 2, "both workers should have answered"
        requests = 20
        for _ in range(requests):
            connector = aiohttp.TCPConnector(force_close=True)
            async with (
                aiohttp.ClientSession(connector=connector) as http,
                http.post(api.url, json={"query": "query Ping { __typename }"}) as r,
            ):
                assert (await r.json())["data"] == {"__typename": "Query"}
        for _ in range(6):
            samples = await scrape(api, fresh_connection=True)
            assert value(samples, "gateway_requests_total", operation="Ping", outcome="ok") == requests
            assert value(samples, "gateway_broker_up") == 1
        assert await gateway.stop() == 0, gateway.output()
    finally:
        if gateway.process.returncode is None:
            gateway.process.kill()
            await gateway.process.wait()


def test_log_lines_are_json_objects_off_a_terminal() -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    stream = io.StringIO()
    try:
        configure_logging(Settings(log_level="INFO"), stream)
        try:
            raise KeyError("lost")
        except KeyError:
            logging.getLogger("gateway.test").exception("could not %s", "go on")
    finally:
        root.handlers[:], root.level = handlers, level
    (line,) = [json.loads(text) for text in stream.getvalue().splitlines()]
    assert {key: line[key] for key in ("level", "logger", "message")} == {
        "level": "ERROR",
        "logger": "gateway.test",
        "message": "could not go on",
    }
    assert "KeyError: 'lost'" in line["exception"]
    assert log_format(Settings(log_format="text"), stream) == "text"


def test_an_unknown_log_format_is_refused() -> None:
    with pytest.raises(SettingsError, match="GATEWAY_LOG_FORMAT must be 'json' or 'text'"):
        Settings(log_format="xml").validate()
