"""Every error answers the same over HTTP and over WebSocket: code, message, field,
extensions, and unexpected errors masked on both."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
import strawberry
from aiohttp.test_utils import TestServer

from gateway.graph.errors import ErrorCodes, ErrorCodeSchema
from gateway.server.app import READY, create_app
from gateway.settings import Settings
from tests.support.client import Api, Response
from tests.support.rooms import POST, create_room, room_name
from tests.support.tcp_proxy import TcpProxy

SECRET = "the vault combination is 12-34-56"


@strawberry.type
class BrokenQuery:
    """A schema with a resolver that fails unexpectedly, built as the gateway's is."""

    @strawberry.field
    def boom(self) -> str:
        raise RuntimeError(SECRET)


@dataclass
class Request:
    api: Api
    query: str
    variables: dict[str, Any] | None = None
    token: str | None = None


@contextlib.asynccontextmanager
async def _gateway(settings: Settings, **kwargs: Any) -> AsyncIterator[Api]:
    app = create_app(settings, **kwargs)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        await app[READY].wait()
        yield Api(str(server.make_url("")))
    finally:
        await server.close()


Case = Callable[[Api, Settings, contextlib.AsyncExitStack], Awaitable[Request]]


async def _unauthenticated(api: Api, _: Settings, __: contextlib.AsyncExitStack) -> Request:
    return Request(api, "mutation { signOut }")


async def _forbidden(api: Api, _: Settings, __: contextlib.AsyncExitStack) -> Request:
    owner, outsider = await api.sign_up("paro"), await api.sign_up("pari")
    name = await create_room(api, owner)
    return Request(api, POST, {"r": name, "c": "let me in"}, outsider.token)


async def _not_found(api: Api, _: Settings, __: contextlib.AsyncExitStack) -> Request:
    account = await api.sign_up("parn")
    return Request(api, "mutation($n: String!) { deleteRoom(name: $n) }", {"n": room_name()}, account.token)


async def _bad_user_input(api: Api, _: Settings, __: contextlib.AsyncExitStack) -> Request:
    account = await api.sign_up("parb")
    return Request(api, POST, {"r": "no", "c": "hello"}, account.token)


async def _too_complex(api: Api, _: Settings, __: contextlib.AsyncExitStack) -> Request:
    flood = "{ " + " ".join(f'a{i}: user(login: "alice") {{ login }}' for i in range(100)) + " }"
    return Request(api, flood)


async def _unavailable(_: Api, settings: Settings, stack: contextlib.AsyncExitStack) -> Request:
    proxy = TcpProxy("127.0.0.1", settings.cassandra_port)
    await proxy.start()
    stack.push_async_callback(proxy.cut)
    proxied = replace(settings, contact_points=("127.0.0.1",), cassandra_port=proxy.port, request_timeout=2.0)
    down = await stack.enter_async_context(_gateway(proxied))
    await proxy.cut()
    return Request(down, "{ posts(first: 1) { nodes { slug } } }")


async def _internal(_: Api, settings: Settings, stack: contextlib.AsyncExitStack) -> Request:
    schema = ErrorCodeSchema(query=BrokenQuery, extensions=[ErrorCodes])
    broken = await stack.enter_async_context(_gateway(settings, schema=schema))
    return Request(broken, "{ boom }")


CASES: dict[str, tuple[Case, str]] = {
    "unauthenticated": (_unauthenticated, "UNAUTHENTICATED"),
    "forbidden": (_forbidden, "FORBIDDEN"),
    "not-found": (_not_found, "NOT_FOUND"),
    "bad-user-input": (_bad_user_input, "BAD_USER_INPUT"),
    "query-too-complex": (_too_complex, "QUERY_TOO_COMPLEX"),
    "unavailable": (_unavailable, "UNAVAILABLE"),
    "internal": (_internal, "INTERNAL_SERVER_ERROR"),
}


def _comparable(response: Response) -> dict[str, Any]:
    """The one error, without what differs by design: the request id's value."""
    assert len(response.errors) == 1, response
    error = response.errors[0]
    extensions = dict(error.get("extensions") or {})
    if "requestId" in extensions:
        assert len(extensions.pop("requestId")) == 32
        extensions["requestId"] = "<id>"
    return {"message": error["message"], "path": error.get("path"), "extensions": extensions}


@pytest.mark.parametrize("case", CASES)
async def test_errors_are_the_same_over_http_and_websocket(
    api: Api, base_settings: Settings, case: str
) -> None:
    make, code = CASES[case]
    async with contextlib.AsyncExitStack() as stack:
        request = await make(api, base_settings, stack)
        over_http = await request.api.call(request.query, request.variables, token=request.token)
        over_ws = await request.api.ws_call(request.query, request.variables, token=request.token)
    http_error, ws_error = _comparable(over_http), _comparable(over_ws)
    assert http_error == ws_error
    assert http_error["extensions"]["code"] == code
    if code == "BAD_USER_INPUT":
        assert http_error["extensions"]["field"] == "room"
    if code == "INTERNAL_SERVER_ERROR":
        assert http_error["message"] == "Internal server error."
        assert SECRET not in str(over_http.errors) + str(over_ws.errors)
    if code == "UNAVAILABLE":
        assert http_error["message"].startswith("Cassandra is unavailable")
