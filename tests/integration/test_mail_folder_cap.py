"""The folder cap under concurrency: exact within one gateway process.

``createFolder`` counts a user's folders and then inserts; per process, each
user's creations queue on one lock, so 30 racing requests at one below the cap
create exactly one folder. (Across P processes the cap is soft by at most
P - 1; see ``gateway/mail/service.py``.)
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from aiohttp import web

from gateway.mail.service import MAX_FOLDERS
from gateway.mail.store import MailStore
from gateway.server.app import SERVICES
from tests.support.client import Api
from tests.support.mail_helpers import CREATE_FOLDER


async def test_30_concurrent_creations_at_one_below_the_cap_create_exactly_one(
    api: Api, app: web.Application
) -> None:
    alice = await api.sign_up("capf")
    store = app[SERVICES].store(MailStore)
    missing = MAX_FOLDERS - 1 - await store.count_folders(alice.login)
    now = datetime.now(UTC)
    for start in range(0, missing, 20):
        await asyncio.gather(
            *(
                store.create_folder(alice.login, f"f{n}", "#000000", now)
                for n in range(start, min(missing, start + 20))
            )
        )
    assert await store.count_folders(alice.login) == MAX_FOLDERS - 1

    responses = await asyncio.gather(
        *(api.call(CREATE_FOLDER, {"label": f"race{n}"}, token=alice.token) for n in range(30))
    )
    created = [r for r in responses if not r.errors]
    refused = [r for r in responses if r.errors]
    assert len(created) == 1
    assert all(
        r.codes == ["BAD_USER_INPUT"] and r.errors[0]["extensions"]["field"] == "label" for r in refused
    )
    assert await store.count_folders(alice.login) == MAX_FOLDERS
