"""Identity verification end to end: codes reach the operator's sender (a local
webhook receiver), and only the right, fresh, unused code links an identity."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from datetime import datetime, timedelta

import pytest
from aiohttp import web

from gateway.contacts.identity import Identity, identity_hash
from gateway.server.app import SERVICES
from gateway.settings import SettingsError
from tests.conftest import ServerFactory
from tests.support.client import Api
from tests.support.contacts import (
    IDENTITIES,
    LINK,
    REQUEST,
    UNLINK,
    all_contacts,
    discoveries,
    e164,
    fresh_phone,
    linked,
    nothing_arrives,
    request_code,
)
from tests.support.webhook import CodeReceiver


def link_vars(phone: str, code: str) -> dict[str, str]:
    return {"network": "tel", "networkId": phone, "code": code}


def wrong(code: str) -> str:
    return f"{(int(code) + 1) % 10**6:06d}"


async def test_the_sender_receives_the_code_and_the_code_links(
    api: Api, app: web.Application, codes: CodeReceiver
) -> None:
    user = await api.sign_up("verify")
    phone = fresh_phone()
    before = len(codes.received)
    code = await request_code(api, codes, user.token, "tel", phone)
    [payload] = codes.received[before:]
    assert set(payload) == {"network", "networkId", "code", "expiresAt"}
    assert (payload["network"], payload["networkId"]) == ("tel", e164(phone))
    assert re.fullmatch(r"[0-9]{6}", code)
    expires = datetime.fromisoformat(payload["expiresAt"].replace("Z", "+00:00"))
    assert timedelta(minutes=9) < expires - datetime.now(expires.tzinfo) <= timedelta(minutes=10)

    # Stored only as a hash: nothing in the row is the code.
    db = app[SERVICES].db
    digest = identity_hash(
        app[SERVICES].settings.contacts_identity_pepper.encode(), Identity("tel", e164(phone))
    )
    row = (
        await db.execute(
            "SELECT * FROM identity_verifications WHERE login = ? AND identity_hash = ?", (user.login, digest)
        )
    ).one()
    assert row is not None and len(row["code_hash"]) == 32
    assert all(code not in str(value) for value in row.values())

    identity = (await api.ok(LINK, link_vars(phone, code), token=user.token))["linkIdentity"]
    assert identity["networkId"] == e164(phone)
    assert (await api.ok(IDENTITIES, token=user.token))["me"]["identities"] == [identity]


async def test_a_code_is_single_use_and_bound_to_its_user_and_identity(api: Api, codes: CodeReceiver) -> None:
    user, other = await api.sign_up("once"), await api.sign_up("notmine")
    phone = fresh_phone()
    code = await request_code(api, codes, user.token, "tel", phone)
    # Someone else cannot use it, not even for the same identity.
    stolen = await api.error(LINK, link_vars(phone, code), token=other.token)
    assert stolen["extensions"] == {"code": "BAD_USER_INPUT", "field": "code"}
    # Another identity of the same user: not this code either.
    elsewhere = await api.error(LINK, link_vars(fresh_phone(), code), token=user.token)
    assert elsewhere["extensions"] == {"code": "BAD_USER_INPUT", "field": "code"}

    await api.ok(LINK, link_vars(phone, code), token=user.token)
    again = await api.error(LINK, link_vars(phone, code), token=user.token)
    assert again["extensions"] == {"code": "BAD_USER_INPUT", "field": "code"}


async def test_a_new_request_replaces_the_pending_code(api: Api, codes: CodeReceiver) -> None:
    user = await api.sign_up("resend")
    phone = fresh_phone()
    first = await request_code(api, codes, user.token, "tel", phone)
    second = await request_code(api, codes, user.token, "tel", phone)
    if first != second:
        old = await api.error(LINK, link_vars(phone, first), token=user.token)
        assert old["extensions"] == {"code": "BAD_USER_INPUT", "field": "code"}
    await api.ok(LINK, link_vars(phone, second), token=user.token)


async def test_wrong_codes_burn_the_code_and_are_rate_limited(api: Api, codes: CodeReceiver) -> None:
    user = await api.sign_up("guess")
    phone = fresh_phone()
    code = await request_code(api, codes, user.token, "tel", phone)
    for _ in range(4):
        error = await api.error(LINK, link_vars(phone, wrong(code)), token=user.token)
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "code"}
    fifth = await api.error(LINK, link_vars(phone, wrong(code)), token=user.token)
    assert fifth["extensions"]["code"] == "RATE_LIMITED"
    assert 0 < fifth["extensions"]["retryAfter"] <= 600
    # Burnt: the right code no longer works, and no new code is sent until it expires.
    right = await api.error(LINK, link_vars(phone, code), token=user.token)
    assert right["extensions"]["code"] == "RATE_LIMITED"
    sent = len(codes.received)
    refused = await api.error(REQUEST, {"network": "tel", "networkId": phone}, token=user.token)
    assert refused["extensions"]["code"] == "RATE_LIMITED"
    assert len(codes.received) == sent
    assert (await api.ok(IDENTITIES, token=user.token))["me"]["identities"] == []


async def test_concurrent_wrong_guesses_all_count(api: Api, codes: CodeReceiver) -> None:
    user = await api.sign_up("flood")
    phone = fresh_phone()
    code = await request_code(api, codes, user.token, "tel", phone)
    guesses = [f"{n:06d}" for n in range(20) if f"{n:06d}" != code][:12]
    responses = await asyncio.gather(
        *(api.call(LINK, link_vars(phone, g), token=user.token) for g in guesses)
    )
    codes_seen = [r.codes[0] for r in responses]
    assert codes_seen.count("BAD_USER_INPUT") == 4
    assert codes_seen.count("RATE_LIMITED") == 8
    assert (await api.error(LINK, link_vars(phone, code), token=user.token))["extensions"]["code"] == (
        "RATE_LIMITED"
    )


async def test_an_expired_code_is_bad_user_input(make_server: ServerFactory, codes: CodeReceiver) -> None:
    short, _ = await make_server(verification_code_ttl_seconds=1)
    user = await short.sign_up("expire")
    phone = fresh_phone()
    code = await request_code(short, codes, user.token, "tel", phone)
    await asyncio.sleep(2.5)  # the row's TTL runs out
    error = await short.error(LINK, link_vars(phone, code), token=user.token)
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "code"}


async def test_malformed_codes_are_refused_before_anything_is_read(api: Api) -> None:
    user = await api.sign_up("malformed")
    for code in ("", "12345", "1234567", "12a456"):
        error = await api.error(LINK, link_vars(fresh_phone(), code), token=user.token)
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "code"}
    missing = await api.error(REQUEST, {"network": "tel", "networkId": "12"}, token=user.token)
    assert missing["extensions"] == {"code": "BAD_USER_INPUT", "field": "networkId"}


async def test_code_requests_per_user_are_limited(make_server: ServerFactory, codes: CodeReceiver) -> None:
    strict, _ = await make_server(rate_verification_requests="2/h")
    user, other = await strict.sign_up("asks"), await strict.sign_up("asksnot")
    for _ in range(2):
        await request_code(strict, codes, user.token, "tel", fresh_phone())
    third = await strict.error(REQUEST, {"network": "tel", "networkId": fresh_phone()}, token=user.token)
    assert third["extensions"]["code"] == "RATE_LIMITED"
    # A token bucket of 2 an hour refills one every half hour.
    assert 1700 < third["extensions"]["retryAfter"] <= 1800
    await request_code(strict, codes, other.token, "tel", fresh_phone())


async def test_a_sender_that_fails_gives_a_clear_unavailable_after_bounded_retries(
    make_server: ServerFactory,
) -> None:
    failing = CodeReceiver()
    failing.status = 503
    await failing.start()
    try:
        down, _ = await make_server(verification_webhook_url=failing.url, verification_webhook_attempts=3)
        user = await down.sign_up("nosms")
        error = await down.error(REQUEST, {"network": "tel", "networkId": fresh_phone()}, token=user.token)
        assert error["extensions"] == {"code": "UNAVAILABLE", "retrySafe": True}
        assert "HTTP 503" in error["message"] and "3 attempts" in error["message"]
        assert failing.calls == 3
    finally:
        await failing.close()

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    gone, _ = await make_server(
        verification_webhook_url=f"http://127.0.0.1:{closed}/codes", verification_webhook_attempts=2
    )
    user = await gone.sign_up("nohost")
    error = await gone.error(REQUEST, {"network": "tel", "networkId": fresh_phone()}, token=user.token)
    assert error["extensions"]["code"] == "UNAVAILABLE"
    assert "could not be reached" in error["message"]


async def test_without_a_webhook_the_code_goes_to_the_log(
    make_server, caplog: pytest.LogCaptureFixture
) -> None:
    local, _ = await make_server(verification_webhook_url="")
    user = await local.sign_up("logged")
    phone = fresh_phone()
    with caplog.at_level(logging.WARNING, logger="gateway.contacts.webhook"):
        await local.ok(REQUEST, {"network": "tel", "networkId": phone}, token=user.token)
    [record] = [r for r in caplog.records if e164(phone) in r.getMessage()]
    assert record.levelno == logging.WARNING
    code = re.search(r" is ([0-9]{6}) ", record.getMessage())
    assert code is not None
    await local.ok(LINK, link_vars(phone, code.group(1)), token=user.token)


async def test_a_real_cluster_does_not_start_without_a_webhook_so_no_code_reaches_the_log(
    make_server: ServerFactory,
) -> None:
    # A contact point makes it a real cluster to the gateway, whoever serves 127.0.0.1.
    with pytest.raises(SettingsError) as refused:
        await make_server(contact_points=("127.0.0.1",), verification_webhook_url="")
    assert refused.value.variable == "GATEWAY_VERIFICATION_WEBHOOK_URL"
    assert "\n" not in refused.value.message


async def test_unlink_releases_the_identity_and_uploaders_lose_the_user(
    api: Api, app: web.Application, codes: CodeReceiver
) -> None:
    owner, uploader, successor = await asyncio.gather(
        *(api.sign_up(p) for p in ("leaver", "keeper", "successor"))
    )
    phone = fresh_phone()
    await linked(api, codes, owner.token, "tel", phone)
    upload = """mutation($contacts: [ContactInput!]!) {
      uploadContacts(network: "tel", contacts: $contacts) { discovered { login } } }"""
    sync = await api.ok(upload, {"contacts": [{"networkId": phone, "name": "Them"}]}, token=uploader.token)
    assert sync["uploadContacts"]["discovered"] == [{"login": owner.login}]

    variables = {"network": "tel", "networkId": phone}
    async with discoveries(api, app, uploader.login, uploader.token) as events:
        assert (await api.ok(UNLINK, variables, token=owner.token))["unlinkIdentity"] is True
        assert await nothing_arrives(events)
        [contact] = await all_contacts(api, uploader.token)
        assert (contact["user"], contact["discoveredAt"]) == (None, None)
        assert (await api.ok(IDENTITIES, token=owner.token))["me"]["identities"] == []
        # Not held any more: unlinking again says so.
        assert (await api.ok(UNLINK, variables, token=owner.token))["unlinkIdentity"] is False

        # Free for whoever proves it next; the uploader discovers them.
        await linked(api, codes, successor.token, "tel", phone)
        event = await asyncio.wait_for(events.get(), timeout=10)
        assert event["user"]["login"] == successor.login
    [contact] = await all_contacts(api, uploader.token)
    assert contact["user"]["login"] == successor.login
    # Someone who does not hold it cannot release it.
    assert (await api.ok(UNLINK, variables, token=owner.token))["unlinkIdentity"] is False
    assert (await api.ok(IDENTITIES, token=successor.token))["me"]["identities"][0]["networkId"] == e164(
        phone
    )


async def test_an_unlink_cut_short_after_the_release_is_finished_by_the_next(
    api: Api, app: web.Application, codes: CodeReceiver
) -> None:
    owner = await api.sign_up("halfgone")
    phone = fresh_phone()
    await linked(api, codes, owner.token, "tel", phone)
    digest = identity_hash(
        app[SERVICES].settings.contacts_identity_pepper.encode(), Identity("tel", e164(phone))
    )
    # What an unlink leaves when it dies right after releasing the owner row.
    await app[SERVICES].db.execute(
        "DELETE FROM identity_owners WHERE identity_hash = ? IF login = ?", (digest, owner.login)
    )
    assert len((await api.ok(IDENTITIES, token=owner.token))["me"]["identities"]) == 1
    variables = {"network": "tel", "networkId": phone}
    assert (await api.ok(UNLINK, variables, token=owner.token))["unlinkIdentity"] is True
    assert (await api.ok(IDENTITIES, token=owner.token))["me"]["identities"] == []
    assert (await api.ok(UNLINK, variables, token=owner.token))["unlinkIdentity"] is False
