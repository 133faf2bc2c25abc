"""A local stand-in for the operator's SMS / email sender: an aiohttp server that
receives verification codes from the gateway's webhook, as a provider would."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer


class CodeReceiver:
    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        #: The W3C ``traceparent`` each delivery came with (None: none).
        self.traceparents: list[str | None] = []
        #: HTTP status answered to the next deliveries (200 = accept).
        self.status = 200
        self.calls = 0
        app = web.Application()
        app.router.add_post("/codes", self._receive)
        self._server = TestServer(app, host="127.0.0.1")

    @property
    def url(self) -> str:
        return str(self._server.make_url("/codes"))

    async def start(self) -> None:
        await self._server.start_server()

    async def close(self) -> None:
        await self._server.close()

    async def _receive(self, request: web.Request) -> web.Response:
        self.calls += 1
        if self.status != 200:
            return web.Response(status=self.status)
        self.received.append(await request.json())
        self.traceparents.append(request.headers.get("traceparent"))
        return web.json_response({"accepted": True})

    def last_code(self, network: str, network_id: str) -> str:
        """The newest code sent to that identity (normalised id, as the gateway sends it)."""
        for payload in reversed(self.received):
            if payload["network"] == network and payload["networkId"] == network_id:
                return str(payload["code"])
        raise AssertionError(f"no code was sent to {network}:{network_id}")
