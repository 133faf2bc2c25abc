"""Rate limits through a real client: each gateway here is started with small limits of its own.

Addresses other than 127.0.0.1 are presented the way a deployment sees them: the
test client is a trusted proxy (``trusted_proxies=("127.0.0.1",)``) and names the
client in ``X-Forwarded-For``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from gql import GraphQLRequest
from gql.transport.exceptions import TransportQueryError

from tests.conftest import ServerFactory
from tests.support.blog import ADD_COMMENT, comment_input, publish
from tests.support.client import Account, Api, Response, unique_login
from tests.support.contacts import UPLOAD, fresh_phone, linked
from tests.support.mail_helpers import SEND as SEND_EMAIL
from tests.support.mail_helpers import email_input
from tests.support.rate_limits import retry_after, sign_in
from tests.support.rooms import POST as POST_ROOM_MESSAGE
from tests.support.rooms import create_room
from tests.support.webhook import CodeReceiver

SEND_MESSAGE = "mutation($to: String!, $c: String!) { sendMessage(to: $to, content: $c) { id } }"
TRUSTED_LOOPBACK: dict[str, Any] = {"trusted_proxies": ("127.0.0.1",)}


def from_address(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


async def test_a_burst_of_wrong_passwords_backs_off_and_the_right_one_works_after_the_wait(
    make_server: ServerFactory,
) -> None:
    api, _ = await make_server(sign_in_free_failures=5, sign_in_backoff=1.0, sign_in_backoff_max=60.0)
    account = await api.sign_up("guessed")
    burst = await asyncio.gather(*(sign_in(api, account.login, f"guess-{i}") for i in range(30)))
    codes = sorted(r.codes[0] for r in burst)
    # Attempts count before their hash is checked, so concurrent guesses cannot all slip in.
    assert codes == ["RATE_LIMITED"] * 25 + ["UNAUTHENTICATED"] * 5
    wait = max(retry_after(r) for r in burst if r.codes == ["RATE_LIMITED"])
    assert wait == 1
    refused = await sign_in(api, account.login, account.password)
    assert retry_after(refused) == 1  # even the right password waits

    await asyncio.sleep(wait + 0.1)
    assert (await sign_in(api, account.login, "still wrong")).codes == ["UNAUTHENTICATED"]
    assert retry_after(await sign_in(api, account.login, account.password)) == 2  # the wait grew
    await asyncio.sleep(2.1)
    ok = await sign_in(api, account.login, account.password)
    assert not ok.errors and ok.data is not None
    assert ok.data["signIn"]["user"]["login"] == account.login

    # A success resets the count: five more failures are free again.
    again = [await sign_in(api, account.login, "nope") for _ in range(5)]
    assert [r.codes for r in again] == [["UNAUTHENTICATED"]] * 5
    # Another login is not affected by the first one's failures, and unknown logins back off alike.
    other = await api.sign_up("bystander")
    assert not (await sign_in(api, other.login, other.password)).errors
    unknown = [await sign_in(api, "nobody-at-all", "x") for _ in range(6)]
    assert [r.codes[0] for r in unknown] == ["UNAUTHENTICATED"] * 5 + ["RATE_LIMITED"]


async def test_sign_in_attempts_are_limited_per_client_address(make_server: ServerFactory) -> None:
    api, _ = await make_server(rate_sign_in="3/h", **TRUSTED_LOOPBACK)
    account = await api.sign_up("addr")
    attacker = from_address("203.0.113.7")
    tries = [await sign_in(api, f"victim{i}", "guess", headers=attacker) for i in range(4)]
    assert [r.codes[0] for r in tries] == ["UNAUTHENTICATED"] * 3 + ["RATE_LIMITED"]
    assert 1150 < retry_after(tries[-1]) <= 1200  # one attempt back every 20 minutes
    # A spoofed left-most entry changes nothing: the trusted proxy's right-most hop counts.
    spoofed = await sign_in(
        api, account.login, account.password, headers=from_address("9.9.9.9, 203.0.113.7")
    )
    assert spoofed.codes == ["RATE_LIMITED"]
    elsewhere = await sign_in(api, account.login, account.password, headers=from_address("198.51.100.9"))
    assert not elsewhere.errors


async def test_failures_from_one_address_never_lock_the_owner_out_from_another(
    make_server: ServerFactory,
) -> None:
    api, _ = await make_server(sign_in_free_failures=2, sign_in_backoff=60.0, **TRUSTED_LOOPBACK)
    victim = await api.sign_up("victim")
    attacker = from_address("203.0.113.50")
    tries = [await sign_in(api, victim.login, f"guess{i}", headers=attacker) for i in range(4)]
    assert [r.codes[0] for r in tries] == ["UNAUTHENTICATED"] * 2 + ["RATE_LIMITED"] * 2
    assert 55 < retry_after(tries[-1]) <= 60
    # The failures are the attacker's address's, for that login: the owner elsewhere signs in.
    owner = await sign_in(api, victim.login, victim.password, headers=from_address("198.51.100.50"))
    assert not owner.errors, owner
    # And the attacker's address is no freer for it.
    assert (await sign_in(api, victim.login, victim.password, headers=attacker)).codes == ["RATE_LIMITED"]


async def test_guesses_spread_over_addresses_are_slowed_per_login_and_the_owner_at_home_is_not(
    make_server: ServerFactory,
) -> None:
    api, _ = await make_server(rate_sign_in_login="3/h", **TRUSTED_LOOPBACK)
    victim = await api.sign_up("spread")
    home = from_address("198.51.100.60")
    assert not (await sign_in(api, victim.login, victim.password, headers=home)).errors
    guesses = [
        await sign_in(api, victim.login, "guess", headers=from_address(f"203.0.113.{60 + i}"))
        for i in range(3)
    ]
    assert [r.codes[0] for r in guesses] == ["UNAUTHENTICATED", "UNAUTHENTICATED", "RATE_LIMITED"]
    assert 1150 < retry_after(guesses[-1]) <= 1200  # one attempt back every 20 minutes: slowed, not locked
    # The right password from an address this login never signed in from waits too, so a
    # refusal tells nothing about the guess.
    new_place = await sign_in(api, victim.login, victim.password, headers=from_address("192.0.2.60"))
    assert new_place.codes == ["RATE_LIMITED"]
    # Where the owner signed in before, the per-login ceiling does not apply.
    assert not (await sign_in(api, victim.login, victim.password, headers=home)).errors


async def sign_up(api: Api, headers: dict[str, str] | None = None) -> Response:
    login = unique_login("su")
    account = {"login": login, "password": "correct-horse", "firstname": "A", "lastname": "B"}
    return await api.call(
        "mutation($i: SignUpInput!) { signUp(input: $i) { user { login } } }",
        {"i": {**account, "email": f"{login}@example.com"}},
        headers=headers,
    )


async def test_sign_ups_are_limited_per_client_address(make_server: ServerFactory) -> None:
    api, _ = await make_server(rate_sign_up="2/h", **TRUSTED_LOOPBACK)
    one, two = from_address("203.0.113.8"), from_address("203.0.113.9")
    results = [await sign_up(api, one) for _ in range(3)]
    assert [r.codes for r in results] == [[], [], ["RATE_LIMITED"]]
    assert 1750 < retry_after(results[-1]) <= 1800
    assert not (await sign_up(api, two)).errors


async def test_probing_logins_through_sign_up_is_rate_limited_conflicts_included(
    make_server: ServerFactory,
) -> None:
    api, _ = await make_server(rate_sign_up="4/h", **TRUSTED_LOOPBACK)
    taken = [(await api.sign_up("taken")).login for _ in range(3)]
    prober = from_address("203.0.113.70")
    probe = "mutation($i: SignUpInput!) { signUp(input: $i) { token } }"

    def attempt(login: str) -> dict[str, Any]:
        fields = {"login": login, "password": "correct-horse", "firstname": "P", "lastname": "Q"}
        return {"i": {**fields, "email": f"{login}@example.com"}}

    answers = [await api.call(probe, attempt(login), headers=prober) for login in [*taken, taken[0]]]
    assert [r.codes for r in answers] == [["CONFLICT"]] * 4
    assert (await api.call(probe, attempt(unique_login("free")), headers=prober)).codes == ["RATE_LIMITED"]
    assert 850 < retry_after(await api.call(probe, attempt(taken[2]), headers=prober)) <= 900
    # The operations of a batch take an attempt each.
    batch = [{"query": probe, "variables": attempt(login)} for login in [*taken, *taken]]
    headers = {**from_address("198.51.100.70"), "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as http, http.post(api.url, json=batch, headers=headers) as answer:
        results = await answer.json()
    codes = sorted(error["extensions"]["code"] for result in results for error in result["errors"])
    assert codes == ["CONFLICT"] * 4 + ["RATE_LIMITED"] * 2


async def test_forwarded_addresses_count_only_behind_a_trusted_proxy(make_server: ServerFactory) -> None:
    api, _ = await make_server(rate_sign_up="2/h")  # no trusted proxy: the socket's address counts
    assert [(await sign_up(api, from_address(f"198.51.100.{i}"))).codes for i in range(3)] == [
        [],
        [],
        ["RATE_LIMITED"],
    ]


async def test_anonymous_comments_are_limited_per_address(make_server: ServerFactory) -> None:
    api, _ = await make_server(rate_comments="20/h", **TRUSTED_LOOPBACK)
    author = await api.sign_up("author")
    slug = (await publish(api, author.token))["slug"]

    async def add_comment(address: str) -> Response:
        variables = {"slug": slug, "input": comment_input()}
        return await api.call(ADD_COMMENT, variables, headers=from_address(address))

    flood = [await add_comment("203.0.113.20") for _ in range(25)]
    assert [bool(r.errors) for r in flood] == [False] * 20 + [True] * 5
    assert all(150 < retry_after(r) <= 180 for r in flood[20:])
    assert not (await add_comment("198.51.100.20")).errors  # another address is unaffected
    # IPv6 clients are counted per /64.
    v6 = [await add_comment(f"2001:db8:5:6::{i:x}") for i in range(1, 22)]
    assert [bool(r.errors) for r in v6] == [False] * 20 + [True]
    assert not (await add_comment("2001:db8:5:7::1")).errors
    count = (await api.ok("query($s: String!) { post(slug: $s) { commentCount } }", {"s": slug}))["post"]
    assert count["commentCount"] == 20 + 1 + 20 + 1  # refused comments store nothing


async def test_sends_share_one_bucket_per_user_over_http_and_websocket(make_server: ServerFactory) -> None:
    api, _ = await make_server(rate_sends="3/h")
    sender, other = await api.sign_up("sender"), await api.sign_up("other")
    room = await create_room(api, sender)
    await api.ok(SEND_MESSAGE, {"to": other.login, "c": "hi"}, token=sender.token)
    await api.ok(POST_ROOM_MESSAGE, {"r": room, "c": "hello room"}, token=sender.token)
    await api.ok(SEND_EMAIL, email_input([other.login]), token=sender.token)
    refused = await api.call(SEND_MESSAGE, {"to": other.login, "c": "one too many"}, token=sender.token)
    assert 1150 < retry_after(refused) <= 1200
    assert (await api.call(POST_ROOM_MESSAGE, {"r": room, "c": "x"}, token=sender.token)).codes == [
        "RATE_LIMITED"
    ]
    async with api.websocket(sender.token) as session:
        with pytest.raises(TransportQueryError) as raised:
            await session.execute(
                GraphQLRequest(SEND_MESSAGE, variable_values={"to": other.login, "c": "ws"})
            )
    [error] = raised.value.errors or []
    assert error["extensions"]["code"] == "RATE_LIMITED"
    assert 1150 < error["extensions"]["retryAfter"] <= 1200
    assert set(error["extensions"]) == {"code", "retryAfter"} == set(refused.errors[0]["extensions"])
    # The other user's bucket is their own.
    await api.ok(SEND_MESSAGE, {"to": sender.login, "c": "my turn"}, token=other.token)
    history = await api.ok(
        "query($w: String!) { me { conversation(with: $w) { messages(first: 10) { nodes { content } } } } }",
        {"w": other.login},
        token=sender.token,
    )
    assert [m["content"] for m in history["me"]["conversation"]["messages"]["nodes"]] == ["my turn", "hi"]


async def test_thirty_concurrent_sends_pass_the_default_limit(make_server: ServerFactory) -> None:
    from gateway.settings import Settings

    api, _ = await make_server(rate_sends=Settings.rate_sends)
    sender, other = await api.sign_up("burst"), await api.sign_up("burstee")
    results = await asyncio.gather(
        *(api.call(SEND_MESSAGE, {"to": other.login, "c": f"m{i}"}, token=sender.token) for i in range(30))
    )
    assert [r.errors for r in results] == [[]] * 30


async def upload(api: Api, account: Account, numbers: list[str]) -> Response:
    contacts = [{"networkId": n, "name": None} for n in numbers]
    return await api.call(UPLOAD, {"network": "tel", "contacts": contacts}, token=account.token)


async def test_contact_uploads_are_limited_per_user(make_server: ServerFactory) -> None:
    api, _ = await make_server(rate_uploads="2/h")
    uploader, other = await api.sign_up("upl"), await api.sign_up("upl2")
    results = [await upload(api, uploader, [fresh_phone()]) for _ in range(3)]
    assert [r.codes for r in results] == [[], [], ["RATE_LIMITED"]]
    assert 1750 < retry_after(results[-1]) <= 1800
    assert not (await upload(api, other, [fresh_phone()])).errors


async def test_identities_answered_with_a_user_are_capped_per_day(
    make_server: ServerFactory, codes: CodeReceiver
) -> None:
    api, _ = await make_server(rate_identity_lookups="3/d")
    owners = [await api.sign_up(f"own{i}") for i in range(5)]
    phones = [fresh_phone() for _ in owners]
    for owner, phone in zip(owners, phones, strict=True):
        await linked(api, codes, owner.token, "tel", phone)
    mapper = await api.sign_up("mapper")
    strangers = [fresh_phone() for _ in range(10)]

    # Four known numbers at once are over the cap of three: refused, and nothing is answered.
    too_many = await upload(api, mapper, phones[:4] + strangers)
    assert too_many.codes == ["RATE_LIMITED"] and too_many.data is None
    assert "at most 3" in too_many.errors[0]["message"]
    # Unknown numbers cost nothing; two known ones cost two.
    first = await upload(api, mapper, phones[:2] + strangers)
    assert not first.errors and first.data is not None
    known = [c["user"]["login"] for c in first.data["uploadContacts"]["contacts"] if c["user"]]
    assert known == [owners[0].login, owners[1].login]
    # Identities answered before are not counted again when the book is synced again.
    assert not (await upload(api, mapper, phones[:2] + strangers)).errors
    assert not (await upload(api, mapper, phones[:3] + strangers)).errors  # the third and last
    # The day's answers are used up: an upload that would look anything new up is refused.
    over = await upload(api, mapper, phones[:3] + strangers + [fresh_phone()])
    assert 28000 < retry_after(over) <= 28800  # one more answer every 8 hours
    over = await upload(api, mapper, phones[:4] + strangers)
    assert over.codes == ["RATE_LIMITED"]
    # Another user has a cap of their own.
    assert not (await upload(api, owners[4], phones[:3])).errors


async def test_a_sign_in_flood_is_refused_beyond_the_hashing_queue_and_queries_still_answer(
    make_server: ServerFactory,
) -> None:
    api, _ = await make_server(
        password_threads=1,
        password_queue=2,
        sign_in_free_failures=1000,
        argon2_time_cost=3,
        argon2_memory_cost_kib=65536,
    )
    account = await api.sign_up("flood")
    finished: list[str] = []

    async def attempt(i: int) -> Response:
        response = await sign_in(api, account.login, account.password)
        finished.append("signIn")
        return response

    async def query() -> Response:
        await asyncio.sleep(0.05)  # the flood is queued by now
        response = await api.call("query($l: String!) { user(login: $l) { login } }", {"l": account.login})
        finished.append("query")
        return response

    *flood, answered = await asyncio.gather(*(attempt(i) for i in range(12)), query())
    codes = [r.codes[0] if r.errors else "OK" for r in flood]
    assert codes.count("OK") >= 1 and codes.count("RATE_LIMITED") >= 1
    assert set(codes) == {"OK", "RATE_LIMITED"}
    assert all(retry_after(r) == 1 for r in flood if r.errors)
    # Statement preparation and reads run on other threads: the query is not stuck behind argon2.
    assert not answered.errors and answered.data == {"user": {"login": account.login}}
    assert finished.index("query") < len(finished) - 1
    # With the flood over, signing in works again.
    assert not (await sign_in(api, account.login, account.password)).errors
