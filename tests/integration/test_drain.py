"""SIGTERM drains a real gateway process: ``/readyz`` 503, no new connections, the request
in flight finishes, the open subscription is closed with 1001, and the process exits 0.

The request is held in flight without timing: its body is sent in two halves, and
the test sends the second half only after the signal, so the gateway cannot have
finished it before. That it is inside the handler before the signal is read from
``/readyz`` (``inFlight``).
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.settings import Settings
from tests.support.client import Api
from tests.support.messenger import send
from tests.support.processes import Gateway, start_gateway
from tests.support.redis_helpers import WAIT

RECEIVED = "subscription { messageReceived { id } }"


async def _http(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, dict[str, str], bytes]:
    writer.write(request)
    await writer.drain()
    return await _response(reader)


async def _response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    status_line, *lines = head.strip().split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return int(status_line.split()[1]), headers, body


def _get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


async def _readyz(api: Api) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(f"{api.base_url}/readyz") as response:
        return await response.json()


async def _refuses_connections(port: int) -> None:
    for _ in range(WAIT * 20):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except ConnectionRefusedError:
            return
        writer.close()
        await asyncio.sleep(0.05)
    raise AssertionError("the draining gateway still accepts connections")


@pytest.fixture
async def gateway(base_settings: Settings, server: Any, tmp_path: Path) -> Any:
    gateway = await start_gateway(base_settings, tmp_path, GATEWAY_DRAIN_SECONDS="120")
    yield gateway
    if gateway.process.returncode is None:
        gateway.process.kill()
        await gateway.process.wait()


async def test_sigterm_finishes_the_request_in_flight_and_closes_sockets_with_1001(gateway: Gateway) -> None:
    api = gateway.api
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")

    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(api.url, protocols=["graphql-transport-ws"])
        await ws.send_json({"type": "connection_init", "payload": {"authorization": f"Bearer {bob.token}"}})
        assert (await ws.receive_json(timeout=WAIT))["type"] == "connection_ack"
        await ws.send_json({"id": "1", "type": "subscribe", "payload": {"query": RECEIVED}})
        # Live: resend until an event arrives (the subscription registers asynchronously).
        sent: set[str] = set()
        for _ in range(WAIT * 4):
            sent.add((await send(api, alice, bob.login, "are you there"))["id"])
            try:
                event = await ws.receive_json(timeout=0.25)
            except TimeoutError:
                continue
            assert event["payload"]["data"]["messageReceived"]["id"] in sent
            break
        else:
            raise AssertionError("the subscription never delivered")

        # A keep-alive connection opened before the signal.
        probe = await asyncio.open_connection("127.0.0.1", gateway.port)
        assert (await _http(*probe, _get("/healthz")))[0] == 200

        # The request in flight: headers and half its body.
        body = json.dumps({"query": "query($l: String!) { user(login: $l) { login } }",
                           "variables": {"l": alice.login}}).encode()  # fmt: skip
        held_reader, held_writer = await asyncio.open_connection("127.0.0.1", gateway.port)
        held_writer.write(
            b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {alice.token}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body[: len(body) // 2]
        )
        await held_writer.drain()
        for _ in range(WAIT * 20):
            if (await _readyz(api))["inFlight"] == 1:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the held request never reached the handler")

        gateway.process.send_signal(signal.SIGTERM)

        # The subscription is closed with 1001 (going away).
        closing = await ws.receive(timeout=WAIT)
        assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED), closing
        assert ws.close_code == 1001

        # /readyz on the connection opened before says 503 and closes it.
        for _ in range(WAIT * 20):
            status, headers, answer = await _http(*probe, _get("/readyz"))
            if status == 503:
                assert json.loads(answer)["status"] == "draining"
                assert headers.get("connection", "").lower() == "close"
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("/readyz never said 503")
        await _refuses_connections(gateway.port)

        # Still draining: the held request keeps the process up until it is answered.
        assert gateway.process.returncode is None
        held_writer.write(body[len(body) // 2 :])
        await held_writer.drain()
        status, _, answer = await _response(held_reader)
        assert status == 200
        assert json.loads(answer)["data"] == {"user": {"login": alice.login}}
        held_writer.close()
        await ws.close()

    assert await gateway.wait() == 0
