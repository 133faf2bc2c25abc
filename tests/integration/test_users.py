"""Users and sessions through a real GraphQL client against the real node."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp import web

from devnode.redis import RedisServer
from gateway.broker.sessions import REVOCATIONS
from gateway.settings import Settings
from tests.conftest import ServerFactory
from tests.support.client import Api, unique_login
from tests.support.fuzz.wire import address, exchange
from tests.support.redis_helpers import private_redis, wait_subscribers
from tests.support.ws_protocol import TRANSPORT_WS, WAIT, Socket

SIGN_UP = """mutation($input: SignUpInput!) {
  signUp(input: $input) { token expiresAt user { login firstname lastname bio email createdAt } }
}"""
SIGN_IN = """mutation($login: String!, $password: String!) {
  signIn(login: $login, password: $password) { token user { login } }
}"""
__all__ = ["private_redis"]

ME = "{ me { user { login email firstname } } }"


def sign_up_input(login: str, /, **overrides: object) -> dict[str, object]:
    return {
        "input": {
            "login": login,
            "password": "correct-horse",
            "firstname": "Ada",
            "lastname": "Lovelace",
            "email": f"{login}@example.com",
            "bio": "Analyst",
            **overrides,
        }
    }


async def test_sign_up_sign_in_me_sign_out_round_trip(api: Api) -> None:
    login = unique_login("ada")
    data = await api.ok(SIGN_UP, sign_up_input(login.upper()))
    payload = data["signUp"]
    assert payload["user"]["login"] == login  # stored lower-case
    assert payload["user"]["email"] == f"{login.upper()}@example.com"  # own email is visible
    assert payload["expiresAt"].endswith("Z")
    assert payload["user"]["createdAt"].endswith("Z")
    token = payload["token"]

    me = await api.ok(ME, token=token)
    assert me["me"]["user"]["login"] == login
    assert me["me"]["user"]["firstname"] == "Ada"

    signed_in = await api.ok(SIGN_IN, {"login": login.upper(), "password": "correct-horse"})
    second_token = signed_in["signIn"]["token"]
    assert second_token != token

    assert (await api.ok("mutation { signOut }", token=token))["signOut"] is True
    revoked = await api.error(ME, token=token)
    assert revoked["extensions"]["code"] == "UNAUTHENTICATED"
    # The other session is untouched.
    assert (await api.ok(ME, token=second_token))["me"]["user"]["login"] == login


async def test_me_is_null_without_a_token(api: Api) -> None:
    assert (await api.ok(ME))["me"] is None


@pytest.mark.parametrize(
    "header",
    ["Bearer not-a-real-token", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer " + "x" * 500],
)
async def test_garbage_tokens_are_unauthenticated_not_500(api: Api, header: str) -> None:
    error = await api.error(ME, headers={"Authorization": header})
    assert error["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_token_that_is_not_text_is_unauthenticated_over_http_and_websocket(api: Api) -> None:
    """Found by ``tests/integration/test_fuzz_http.py``: a header's bytes that are not UTF-8 reached the
    session lookup as a string that cannot be encoded, and the answer was INTERNAL_SERVER_ERROR."""
    host, port = address(api.base_url)
    body = json.dumps({"query": ME}).encode()
    head = (
        b"POST /graphql HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer abc\xed\xa0\x80def\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
    )
    answer = await exchange(host, port, head + body)
    assert answer.status == 200, answer
    [error] = json.loads(answer.body)["errors"]
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    for token in ("abc\ud800def", "abc def", "a" * 2000):
        async with Socket.open(api, TRANSPORT_WS) as socket:
            await socket.send({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}})
            assert await asyncio.wait_for(socket.close_code(), WAIT) == 4403, token


async def test_a_password_that_is_not_unicode_is_bad_input_at_sign_up_and_wrong_at_sign_in(api: Api) -> None:
    """Found by ``tests/integration/test_fuzz_variables.py``: a lone surrogate in a password reached the
    password hash, which cannot encode it, and the answer was INTERNAL_SERVER_ERROR."""
    login = unique_login("surr")
    sign_up = "mutation($i: SignUpInput!) { signUp(input: $i) { token } }"
    fields = {"login": login, "firstname": "S", "lastname": "U", "email": f"{login}@example.com"}
    error = await api.error(sign_up, {"i": {**fields, "password": "correct-horse\ud800"}})
    assert (error["extensions"]["code"], error["extensions"]["field"]) == ("BAD_USER_INPUT", "password")
    account = await api.sign_up("surrb")
    sign_in = "mutation($l: String!, $p: String!) { signIn(login: $l, password: $p) { token } }"
    for login_given in (account.login, "nobody-surrogate"):
        error = await api.error(sign_in, {"l": login_given, "p": "\ud800"})
        assert error["extensions"]["code"] == "UNAUTHENTICATED"


async def test_expired_session_is_unauthenticated(api: Api, app: web.Application) -> None:
    from datetime import UTC, datetime, timedelta

    from gateway.server.app import SERVICES
    from gateway.users.store import hash_token

    account = await api.sign_up("exp")
    db = app[SERVICES].db
    # A session row whose expiry has passed (its TTL has not fired yet).
    await db.execute(
        "INSERT INTO sessions (token_hash, login, created_at, expires_at) VALUES (?, ?, ?, ?)",
        (
            hash_token("expired-token"),
            account.login,
            datetime.now(UTC) - timedelta(days=31),
            datetime.now(UTC) - timedelta(seconds=1),
        ),
    )
    error = await api.error(ME, token="expired-token")
    assert error["extensions"]["code"] == "UNAUTHENTICATED"


async def test_wrong_password_and_unknown_login_give_the_same_error(api: Api) -> None:
    account = await api.sign_up("pw")
    wrong = await api.error(SIGN_IN, {"login": account.login, "password": "wrong-password"})
    unknown = await api.error(SIGN_IN, {"login": unique_login("nobody"), "password": "wrong-password"})
    invalid = await api.error(SIGN_IN, {"login": "!!", "password": "wrong-password"})
    assert wrong["extensions"]["code"] == unknown["extensions"]["code"] == "UNAUTHENTICATED"
    assert wrong["message"] == unknown["message"] == invalid["message"]


async def test_concurrent_sign_ups_for_one_login_exactly_one_wins(api: Api) -> None:
    login = unique_login("race")
    responses = await asyncio.gather(*(api.call(SIGN_UP, sign_up_input(login)) for _ in range(20)))
    winners = [r for r in responses if not r.errors]
    losers = [r for r in responses if r.errors]
    assert len(winners) == 1
    assert len(losers) == 19
    assert all(r.codes == ["CONFLICT"] for r in losers)
    assert all(r.errors[0]["extensions"].get("field") == "login" for r in losers)
    # The winner's password is the one stored.
    await api.ok(SIGN_IN, {"login": login, "password": "correct-horse"})


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"login": "ab"}, "login"),
        ({"login": "a" * 31}, "login"),
        ({"login": "_abc"}, "login"),
        ({"login": "ab c"}, "login"),
        ({"login": "abc!"}, "login"),
        ({"password": "short"}, "password"),
        ({"password": "x" * 129}, "password"),
        ({"firstname": "  "}, "firstname"),
        ({"firstname": "x" * 101}, "firstname"),
        ({"lastname": ""}, "lastname"),
        ({"lastname": "x" * 101}, "lastname"),
        ({"email": "not-an-email"}, "email"),
        ({"email": "a@b"}, "email"),
        ({"bio": "x" * 2001}, "bio"),
    ],
)
async def test_sign_up_validation_names_the_field(api: Api, overrides: dict[str, object], field: str) -> None:
    login = unique_login("val")
    error = await api.error(SIGN_UP, sign_up_input(login, **overrides))
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["extensions"]["field"] == field
    # Nothing was created.
    if field != "login":
        found = await api.ok("query($l: String!) { user(login: $l) { login } }", {"l": login})
        assert found["user"] is None


async def test_update_profile_changes_only_given_fields(api: Api) -> None:
    account = await api.sign_up("prof", firstname="Grace", lastname="Hopper", bio="Admiral")
    data = await api.ok(
        'mutation { updateProfile(input: {bio: "Compiler pioneer"}) { login firstname lastname bio } }',
        token=account.token,
    )
    assert data["updateProfile"] == {
        "login": account.login,
        "firstname": "Grace",
        "lastname": "Hopper",
        "bio": "Compiler pioneer",
    }
    error = await api.error(
        'mutation { updateProfile(input: {email: "nope"}) { login } }', token=account.token
    )
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "email"}
    error = await api.error('mutation { updateProfile(input: {firstname: "x"}) { login } }')
    assert error["extensions"]["code"] == "UNAUTHENTICATED"


async def test_email_is_only_visible_to_its_owner(api: Api) -> None:
    owner = await api.sign_up("own")
    other = await api.sign_up("oth")
    query = "query($l: String!) { user(login: $l) { login email } }"
    assert (await api.ok(query, {"l": owner.login}, token=owner.token))["user"]["email"] == (
        f"{owner.login}@example.com"
    )
    assert (await api.ok(query, {"l": owner.login}, token=other.token))["user"]["email"] is None
    assert (await api.ok(query, {"l": owner.login}))["user"]["email"] is None


async def test_missing_user_is_null(api: Api) -> None:
    assert (await api.ok('{ user(login: "nobody-here-at-all") { login } }'))["user"] is None
    assert (await api.ok('{ user(login: "!") { login } }'))["user"] is None


async def test_token_from_one_instance_works_on_another(
    make_server: ServerFactory, private_redis: RedisServer, base_settings: Settings
) -> None:
    """Two instances over one broker, as instances are deployed: the sign-out on the other
    reaches the session the first keeps in memory through it."""
    first, _ = await make_server(broker_url=private_redis.url)
    other_api, _ = await make_server(broker_url=private_redis.url)
    await wait_subscribers(private_redis.url, f"{base_settings.keyspace}:{REVOCATIONS}", 2)
    account = await first.sign_up("multi")
    me = await other_api.ok(ME, token=account.token)
    assert me["me"]["user"]["login"] == account.login
    await other_api.ok("mutation { signOut }", token=account.token)
    assert (await first.error(ME, token=account.token))["extensions"]["code"] == "UNAUTHENTICATED"


async def test_websocket_connection_init_authenticates(api: Api) -> None:
    from gql import GraphQLRequest

    account = await api.sign_up("ws")
    async with api.websocket(account.token) as session:
        result = await session.execute(GraphQLRequest(ME))
    assert result["me"]["user"]["login"] == account.login
    async with api.websocket() as session:
        result = await session.execute(GraphQLRequest(ME))
    assert result["me"] is None
