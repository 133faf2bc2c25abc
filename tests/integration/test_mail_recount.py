"""Counter drift after failed writes, healed by ``gateway mail-recount <login>``."""

from __future__ import annotations

from aiohttp import web

from gateway.db.clock import now_micros
from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.support.cli import run_cli
from tests.support.client import Api
from tests.support.ids import key, uuid_of
from tests.support.mail_helpers import CREATE_FOLDER, EMAIL, FOLDER, MOVE, send, unread_counts


async def _recount(settings: Settings, login: str) -> tuple[int, str]:
    return await run_cli(settings, "mail-recount", login)


async def test_recount_heals_counters_and_listings_after_lost_writes(
    api: Api, app: web.Application, base_settings: Settings
) -> None:
    alice, bob = await api.sign_up("rca"), await api.sign_up("rcb")
    await api.ok(CREATE_FOLDER, {"label": "work"}, token=bob.token)
    emails = [await send(api, alice, [bob.login], f"n{i}") for i in range(4)]
    await api.ok(MOVE, {"id": emails[0]["id"], "from": "inbox", "to": "work"}, token=bob.token)
    assert await unread_counts(api, bob) == {"inbox": 3, "sent": 0, "work": 1}

    db = app[SERVICES].db
    # Lost counter writes: the inbox counter ran ahead, the work counter fell behind.
    await db.execute(
        "UPDATE unread_email_stats SET unread = unread + 4 WHERE username = ? AND label = ?",
        (bob.login, "inbox"),
    )
    await db.execute(
        "UPDATE unread_email_stats SET unread = unread - 2 WHERE username = ? AND label = ?",
        (bob.login, "work"),
    )
    # A mark-read whose lightweight transaction applied but whose listing and
    # counter writes never happened (the gateway died right after the LWT).
    applied = await db.execute(
        "INSERT INTO email_placements (username, email_id, label, read, changed_at) VALUES (?, ?, ?, ?, ?)"
        " IF NOT EXISTS",
        (bob.login, uuid_of(emails[1]["id"]), "inbox", True, now_micros()),
    )
    assert applied.applied
    assert await unread_counts(api, bob) == {"inbox": 7, "sent": 0, "work": 0}

    code, output = await _recount(base_settings, bob.login)
    assert code == 0, output
    assert f"{bob.login} inbox: 2 unread  (was 7)" in output
    assert f"{bob.login} work: 1 unread  (was -1)" in output
    assert await unread_counts(api, bob) == {"inbox": 2, "sent": 0, "work": 1}
    inbox = await api.ok(FOLDER, {"label": "inbox"}, token=bob.token)
    flags = {key(e["node"]["id"]): e["node"]["read"] for e in inbox["me"]["folder"]["emails"]["edges"]}
    assert flags == {key(emails[1]["id"]): True, key(emails[2]["id"]): False, key(emails[3]["id"]): False}
    assert (await api.ok(EMAIL, {"id": emails[1]["id"]}, token=bob.token))["me"]["email"]["read"] is True

    # Running it again changes nothing; an unknown login is an error.
    code, output = await _recount(base_settings, bob.login)
    assert code == 0 and "was" not in output, output
    assert await unread_counts(api, bob) == {"inbox": 2, "sent": 0, "work": 1}
    code, output = await _recount(base_settings, "nobody-at-all")
    assert code == 2 and "no user" in output
