"""The fan-out of a linked identity to its uploaders: off the request path, paged, durable.

Uploaders' rows are written straight to Cassandra (the reverse index and the book
row, as an upload leaves them) so that 10 000 of them take seconds to set up.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

from aiohttp import web

from gateway.contacts.identity import Identity, identity_hash
from gateway.contacts.job_store import FanoutJobs
from gateway.contacts.records import BookEntry, JobKey, shard_of
from gateway.contacts.store import ContactStore
from gateway.db import clock
from gateway.db.concurrency import InFlightLimit
from gateway.db.session import Database
from gateway.server.app import SERVICES
from tests.support.client import Api
from tests.support.contacts import (
    LINK,
    UPLOAD,
    discoveries,
    e164,
    fanouts_done,
    fresh_phone,
    request_code,
)
from tests.support.webhook import CodeReceiver


def _digest(app: web.Application, phone: str) -> bytes:
    pepper = app[SERVICES].settings.contacts_identity_pepper.encode()
    return identity_hash(pepper, Identity("tel", e164(phone)))


async def _uploaders(db: Database, digest: bytes, phone: str, count: int) -> list[str]:
    """``count`` address books holding ``phone``, written as an upload writes them."""
    run = uuid.uuid4().hex[:8]
    logins = [f"fan{run}{i:05d}" for i in range(count)]

    def write(login: str) -> Any:
        async def run_writes() -> None:
            await db.execute(
                "INSERT INTO contact_index (identity_hash, login) VALUES (?, ?)", (digest, login)
            )
            await db.execute(
                "INSERT INTO contact_books (login, network, identity_hash, network_id, name)"
                " VALUES (?, 'tel', ?, ?, 'Famous')",
                (login, digest, e164(phone)),
            )

        return run_writes

    await InFlightLimit(64).run_all([write(login) for login in logins])
    return logins


async def _entries_once_discovered(
    store: ContactStore, logins: list[str], digest: bytes, within: float = 300.0
) -> dict[str, BookEntry]:
    """The book rows of ``logins``, read until every one names an owner (bounded wait)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        entries = await store.entries_of(logins, "tel", digest)
        if len(entries) == len(logins) and all(e.owner is not None for e in entries.values()):
            return entries
        assert loop.time() < deadline, "the fan-out did not reach every uploader"
        await asyncio.sleep(1.0)


async def test_a_link_reaches_10000_uploaders_without_waiting_for_them(
    api: Api, app: web.Application, codes: CodeReceiver
) -> None:
    owner, listener, quiet = await asyncio.gather(*(api.sign_up(p) for p in ("famous", "fan", "quiet")))
    phone = fresh_phone()
    digest = _digest(app, phone)
    book = {"network": "tel", "contacts": [{"networkId": phone, "name": "Famous"}]}
    await api.ok(UPLOAD, book, token=listener.token)
    db = app[SERVICES].db
    uploaders = await _uploaders(db, digest, phone, 9_999) + [listener.login]

    unknown = fresh_phone()
    code = await request_code(api, codes, quiet.token, "tel", unknown)
    nobody = await api.call(LINK, {"network": "tel", "networkId": unknown, "code": code}, token=quiet.token)
    async with discoveries(api, app, listener.login, listener.token) as events:
        code = await request_code(api, codes, owner.token, "tel", phone)
        variables = {"network": "tel", "networkId": phone, "code": code}
        everybody = await api.call(LINK, variables, token=owner.token)
        assert not nobody.errors and not everybody.errors
        # identity list, the code (read, consumed), claim, identity row, job: the same for 0
        # or 10 000 uploaders (the session is known to the process since the sign-up)
        assert everybody.statements == nobody.statements == 6
        event = await asyncio.wait_for(events.get(), timeout=300)
        assert (event["networkId"], event["user"]["login"]) == (e164(phone), owner.login)

    store = ContactStore(db, app[SERVICES].settings)
    entries = await _entries_once_discovered(store, uploaders, digest)
    assert {e.owner for e in entries.values()} == {owner.login}
    await fanouts_done(app)


async def test_a_job_its_worker_abandoned_is_finished_from_its_last_page_by_another(
    app: web.Application, make_server: Any, api: Api
) -> None:
    owner = await api.sign_up("orphan")
    phone = fresh_phone()
    digest = _digest(app, phone)
    db = app[SERVICES].db
    settings = app[SERVICES].settings
    uploaders = sorted(await _uploaders(db, digest, phone, 300))
    store = ContactStore(db, settings)
    linked_at = clock.now()
    assert (await store.claim(digest, "tel", owner.login, linked_at)).won
    # Another gateway, looking for orphaned jobs five times a second.
    await make_server(
        contacts_fanout_poll_seconds=0.2, contacts_fanout_lease_seconds=2.0, contacts_fanout_batch=40
    )
    # A worker took the job, recorded its first 150 uploaders as done, and died.
    key = JobKey(digest, owner.login)
    dead, lease_until = uuid.uuid4(), clock.now() + timedelta(seconds=5)
    written = await db.execute(
        "INSERT INTO contact_fanouts (shard, identity_hash, owner, network, linked_at, after_login, done,"
        " holder, lease_until) VALUES (?, ?, ?, 'tel', ?, ?, 150, ?, ?) IF NOT EXISTS",
        (shard_of(digest), digest, owner.login, linked_at, uploaders[149], dead, lease_until),
    )
    assert written.applied

    await asyncio.sleep(0.5)
    # While the dead worker's lease runs, nobody takes the job over.
    jobs = FanoutJobs(db)
    [waiting] = [job for job in await jobs.waiting(shard_of(digest), 100) if job.key == key]
    assert (waiting.after_login, waiting.done) == (uploaders[149], 150)

    await fanouts_done(app, within=60)
    entries = await store.entries_of(uploaders, "tel", digest)
    # Continued after the recorded uploader, not started again: the first 150 were
    # the dead worker's (which never wrote them here).
    assert [entries[login].owner for login in uploaders[150:]] == [owner.login] * 150
    assert [entries[login].owner for login in uploaders[:150]] == [None] * 150
