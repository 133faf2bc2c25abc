"""A GraphQL client for the tests: ``gql`` over HTTP and WebSocket, as a frontend calls the API."""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from gql import Client, GraphQLRequest
from gql.transport.aiohttp import AIOHTTPTransport
from gql.transport.exceptions import TransportQueryError
from gql.transport.websockets import WebsocketsTransport

_counter = itertools.count()


def unique_login(prefix: str = "u") -> str:
    """A login no other test uses (3-30 characters)."""
    return f"{prefix[:12]}{next(_counter)}x{uuid.uuid4().hex[:8]}".lower()


@dataclass
class Response:
    data: dict[str, Any] | None
    errors: list[dict[str, Any]] = field(default_factory=list)
    extensions: dict[str, Any] = field(default_factory=dict)

    @property
    def result(self) -> dict[str, Any]:
        """``data``, which must be there."""
        assert self.data is not None, self.errors
        return self.data

    @property
    def codes(self) -> list[str]:
        return [e.get("extensions", {}).get("code") for e in self.errors]

    @property
    def statements(self) -> int:
        return int(self.extensions["cql"]["statements"])


@dataclass
class Account:
    login: str
    token: str
    password: str


class Api:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/graphql"

    def _headers(self, token: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"} if token is not None else {}

    async def call(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        upload_files: bool = False,
    ) -> Response:
        preflight = {"GraphQL-Preflight": "1"} if upload_files else {}
        transport = AIOHTTPTransport(
            url=self.url, headers={**self._headers(token), **preflight, **(headers or {})}
        )
        async with Client(transport=transport, execute_timeout=60) as session:
            try:
                result = await session.execute(
                    GraphQLRequest(query, variable_values=variables),
                    get_execution_result=True,
                    upload_files=upload_files,
                )
            except TransportQueryError as exc:
                return Response(exc.data, list(exc.errors or []), dict(exc.extensions or {}))
        return Response(result.data, [], dict(result.extensions or {}))

    async def ok(self, query: str, variables: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        response = await self.call(query, variables, **kwargs)
        assert not response.errors, response.errors
        assert response.data is not None
        return response.data

    async def error(
        self, query: str, variables: dict[str, Any] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """The single error the operation must fail with."""
        response = await self.call(query, variables, **kwargs)
        assert len(response.errors) == 1, response
        return response.errors[0]

    async def sign_up(self, prefix: str = "u", password: str = "correct-horse", **fields: str) -> Account:
        login = unique_login(prefix)
        data = await self.ok(
            """mutation($input: SignUpInput!) { signUp(input: $input) { token user { login } } }""",
            {
                "input": {
                    "login": login,
                    "password": password,
                    "firstname": fields.get("firstname", "Test"),
                    "lastname": fields.get("lastname", "User"),
                    "email": fields.get("email", f"{login}@example.com"),
                    "bio": fields.get("bio", ""),
                }
            },
        )
        assert data["signUp"]["user"]["login"] == login
        return Account(login=login, token=data["signUp"]["token"], password=password)

    @contextlib.asynccontextmanager
    async def websocket(self, token: str | None = None) -> AsyncIterator[Any]:
        """A ``graphql-transport-ws`` session; the token goes in ``connection_init``."""
        ws_url = self.url.replace("http://", "ws://", 1)
        payload = {"authorization": f"Bearer {token}"} if token else {}
        transport = WebsocketsTransport(
            url=ws_url, init_payload=payload, subprotocols=["graphql-transport-ws"]
        )
        async with Client(transport=transport, execute_timeout=30) as session:
            yield session

    async def ws_call(
        self, query: str, variables: dict[str, Any] | None = None, *, token: str | None = None
    ) -> Response:
        """``call``, as one operation over ``graphql-transport-ws``."""
        async with self.websocket(token) as session:
            try:
                result = await session.execute(
                    GraphQLRequest(query, variable_values=variables), get_execution_result=True
                )
            except TransportQueryError as exc:
                return Response(exc.data, list(exc.errors or []), dict(exc.extensions or {}))
        return Response(result.data, [], dict(result.extensions or {}))
