"""Overload is shed, not queued: over its bound a process refuses a request at once with
503, ``Retry-After`` and ``UNAVAILABLE``, serves the probes, ``/metrics`` and WebSockets
meanwhile, and serves requests again as soon as the work in flight is done.

Nothing here depends on timing. Requests are held in flight as the drain test holds
them: headers and half a body sent, the rest only when the test says, the gateway's
own count of admitted requests read to know they are inside. CQL statements are held in
flight by a proxy in front of Cassandra that keeps their answers until the test releases
them.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway.server.app import ADMISSION, SERVICES
from gateway.server.metrics import METRICS
from gateway.settings import Settings
from tests.conftest import ServerFactory
from tests.support.client import Api
from tests.support.redis_helpers import WAIT
from tests.support.tcp_proxy import TcpProxy

GRJ = "application/graphql-response+json"
USER = "query($l: String!) { user(login: $l) { login } }"


async def until(check: Any, what: str) -> None:
    for _ in range(WAIT * 100):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


class Held:
    """A POST whose body is half sent: the gateway has admitted it and waits for the rest."""

    def __init__(self, api: Api, login: str) -> None:
        self.api = api
        self.body = json.dumps({"query": USER, "variables": {"l": login}}).encode()
        self.reader: asyncio.StreamReader
        self.writer: asyncio.StreamWriter

    async def open(self) -> None:
        port = int(self.api.base_url.rsplit(":", 1)[1])
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port)
        self.writer.write(
            b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(self.body)}\r\n\r\n".encode()
            + self.body[: len(self.body) // 2]
        )
        await self.writer.drain()

    async def finish(self) -> tuple[int, dict[str, Any]]:
        self.writer.write(self.body[len(self.body) // 2 :])
        await self.writer.drain()
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode()
        status_line, *lines = head.strip().split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        body = await self.reader.readexactly(int(headers["content-length"]))
        self.writer.close()
        return int(status_line.split()[1]), json.loads(body)


async def raw(api: Api, path: str = "/graphql", **kwargs: Any) -> tuple[int, Any, bytes]:
    async with aiohttp.ClientSession() as http, http.request("POST" if "json" in kwargs else "GET",
                                                             api.base_url + path, **kwargs) as r:  # fmt: skip
        return r.status, r.headers, await r.read()


def shed_count(exposition: str, reason: str) -> float:
    for line in exposition.splitlines():
        if line.startswith(f'gateway_requests_shed_total{{reason="{reason}"}}'):
            return float(line.split()[-1])
    return 0.0


def assert_shed(status: int, headers: Any, body: bytes, media_type: str) -> None:
    assert status == 503
    assert headers["Retry-After"] == "1"
    assert headers["Content-Type"].startswith(media_type)
    (error,) = json.loads(body)["errors"]
    assert error["extensions"] == {"code": "UNAVAILABLE", "retrySafe": True, "retryAfter": 1}


async def test_over_the_request_bound_a_request_is_refused_at_once_and_served_again_after(
    make_server: ServerFactory,
) -> None:
    api, app = await make_server(max_in_flight=2)
    alice = await api.sign_up("shed")
    admission = app[ADMISSION]
    assert admission.in_flight == 0

    held = [Held(api, alice.login), Held(api, alice.login)]
    for request in held:
        await request.open()
    await until(lambda: admission.in_flight == 2, "both held requests admitted")

    # The real client gets the coded error; status and headers as a raw client sees them.
    refused = await api.call(USER, {"l": alice.login})
    assert refused.data is None and refused.codes == ["UNAVAILABLE"]
    assert refused.errors[0]["extensions"]["retrySafe"] is True
    query = {"query": USER, "variables": {"l": alice.login}}
    assert_shed(*await raw(api, json=query, headers={"Accept": GRJ}), GRJ)
    assert_shed(*await raw(api, json=query), "application/json")

    # Probes, /metrics and a WebSocket are not shed.
    assert (await raw(api, "/healthz"))[0] == 200
    status, _, ready = await raw(api, "/readyz")
    assert status == 200 and json.loads(ready)["inFlight"] == 2
    status, _, exposition = await raw(api, "/metrics")
    assert status == 200 and shed_count(exposition.decode(), "requests") == 3
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(api.url, protocols=["graphql-transport-ws"])
        await ws.send_json({"type": "connection_init", "payload": {"authorization": f"Bearer {alice.token}"}})
        assert (await ws.receive_json(timeout=WAIT))["type"] == "connection_ack"
        subscribe = {"query": USER, "variables": {"l": alice.login}}
        await ws.send_json({"id": "1", "type": "subscribe", "payload": subscribe})
        answer = (await ws.receive_json(timeout=WAIT))["payload"]
        assert answer["data"] == {"user": {"login": alice.login}}
        await ws.close()

    # The held requests finish; the very next request is served.
    for request in held:
        status, answer = await request.finish()
        assert (status, answer["data"]) == (200, {"user": {"login": alice.login}})
    assert admission.in_flight == 0
    assert await api.ok(USER, {"l": alice.login}) == {"user": {"login": alice.login}}
    status, _, exposition = await raw(api, "/metrics")
    assert shed_count(exposition.decode(), "requests") == 3


async def test_a_page_of_another_origin_gets_its_preflight_and_can_read_the_refusal(
    make_server: ServerFactory,
) -> None:
    origin = "https://app.example.com"
    api, app = await make_server(max_in_flight=1, cors_origins=(origin,))
    alice = await api.sign_up("shedcors")
    held = Held(api, alice.login)
    await held.open()
    await until(lambda: app[ADMISSION].in_flight == 1, "the held request admitted")

    preflight = {"Origin": origin, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}  # fmt: skip
    async with aiohttp.ClientSession() as http, http.options(api.url, headers=preflight) as allowed:
        assert allowed.status == 200
        assert allowed.headers["Access-Control-Allow-Origin"] == origin
    status, headers, body = await raw(api, json={"query": USER, "variables": {"l": alice.login}},
                                      headers={"Origin": origin})  # fmt: skip
    assert_shed(status, headers, body, "application/json")
    assert headers["Access-Control-Allow-Origin"] == origin
    assert "Retry-After" in headers["Access-Control-Expose-Headers"]
    status, answer = await held.finish()
    assert (status, answer["data"]) == (200, {"user": {"login": alice.login}})


@pytest.fixture
async def proxied(
    make_server: ServerFactory, base_settings: Settings
) -> AsyncIterator[tuple[Api, web.Application, TcpProxy]]:
    """A gateway whose Cassandra answers go through a proxy that can hold them."""
    proxy = TcpProxy("127.0.0.1", base_settings.cassandra_port)
    await proxy.start()
    api, app = await make_server(
        contact_points=("127.0.0.1",),
        cassandra_port=proxy.port,
        request_timeout=60.0,
        max_queued_statements=1,
    )
    yield api, app, proxy
    await proxy.cut()


async def test_over_the_statement_bound_a_request_is_refused_until_the_statements_are_answered(
    proxied: tuple[Api, web.Application, TcpProxy],
) -> None:
    via_proxy, app, proxy = proxied
    db = app[SERVICES].db
    marker = f"held{uuid.uuid4().hex[:12]}"
    sent = proxy.hold_answers_after(marker.encode())
    held = asyncio.create_task(via_proxy.call(USER, {"l": marker}))
    await asyncio.wait_for(sent.wait(), timeout=WAIT)
    await until(lambda: db.statements_in_flight >= 1, "the held statement in flight")

    refused = await via_proxy.call(USER, {"l": "anyone"})
    assert refused.data is None and refused.codes == ["UNAVAILABLE"]
    assert_shed(*await raw(via_proxy, json={"query": "{ __typename }"}, headers={"Accept": GRJ}), GRJ)
    # Its /metrics wants a token (a gateway given contact points is a real cluster's): read in process.
    assert shed_count(app[METRICS].exposition().decode(), "statements") == 2

    proxy.release()
    assert (await asyncio.wait_for(held, timeout=WAIT)).data == {"user": None}
    assert await via_proxy.ok(USER, {"l": marker}) == {"user": None}
