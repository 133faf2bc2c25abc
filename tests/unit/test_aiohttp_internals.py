"""Every name of aiohttp that ``gateway/server/aiohttp_internals.py`` relies on beyond the
documented API exists in the installed aiohttp, with the shape the module expects."""

from __future__ import annotations

import asyncio
import inspect
import re
from pathlib import Path

import aiohttp
from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from aiohttp.web_server import Server

import gateway.server.aiohttp_internals as internals
from gateway.server.aiohttp_internals import DeadlineRequestHandler, Deadlines, DeadlineServer, GatewayRunner

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_installed_aiohttp_is_the_pinned_one_the_docstring_names() -> None:
    pinned = re.search(r'"aiohttp==([0-9.]+)"', PYPROJECT.read_text())
    assert pinned is not None
    assert aiohttp.__version__ == pinned.group(1)
    minor = ".".join(pinned.group(1).split(".")[:2])
    assert f"aiohttp {minor}" in (internals.__doc__ or "")


def test_the_runner_builds_its_server_in_an_overridable_coroutine() -> None:
    assert inspect.iscoroutinefunction(web.AppRunner._make_server)
    assert list(inspect.signature(web.AppRunner._make_server).parameters) == ["self"]
    assert GatewayRunner._make_server is not web.AppRunner._make_server


async def test_a_server_keeps_its_loop_arguments_and_request_factory() -> None:
    async def handler(request: BaseRequest) -> web.StreamResponse:
        return web.Response()

    server = Server(handler, keepalive_timeout=5.0, handler_cancellation=True)
    assert server._loop is asyncio.get_running_loop()
    assert server._kwargs == {"keepalive_timeout": 5.0}
    assert callable(server.request_factory) and server.handler_cancellation is True
    assert list(inspect.signature(server.request_factory).parameters) == [
        "message",
        "payload",
        "protocol",
        "writer",
        "task",
    ]
    rebuilt = DeadlineServer.rebuilt(server, Deadlines(head=1.0))
    assert rebuilt._kwargs == server._kwargs and rebuilt.handler_cancellation is True
    handler_of_a_connection = rebuilt()
    assert isinstance(handler_of_a_connection, DeadlineRequestHandler)
    assert handler_of_a_connection.keepalive_timeout == 5.0


def test_the_connection_handler_has_the_methods_the_subclass_overrides_and_calls() -> None:
    for name in ("connection_made", "data_received", "connection_lost", "force_close", "log_exception"):
        assert callable(getattr(RequestHandler, name)), name
    assert list(inspect.signature(RequestHandler.data_received).parameters) == ["self", "data"]
    assert inspect.iscoroutinefunction(RequestHandler.finish_response)
    assert list(inspect.signature(RequestHandler.finish_response).parameters) == [
        "self",
        "request",
        "resp",
        "start_time",
    ]
    assert "transport" in dir(RequestHandler) and "logger" in dir(RequestHandler)
    assert "exc_info" in inspect.getsource(RequestHandler.handle_error)  # how a parse error reaches the log
    assert list(inspect.signature(Server.__call__).parameters) == ["self"]
