"""Folder paging across time buckets, and constant statement counts per page."""

from __future__ import annotations

import asyncio
import time
import uuid

from aiohttp import web

from gateway.server.app import SERVICES
from tests.conftest import ServerFactory
from tests.support.client import Account, Api
from tests.support.ids import key
from tests.support.mail_helpers import FOLDER, FOLDERS, send


async def _send_many(api: Api, sender: Account, to: Account, count: int, prefix: str) -> list[str]:
    limit = asyncio.Semaphore(8)

    async def one(i: int) -> str:
        async with limit:
            return key((await send(api, sender, [to.login], f"{prefix}{i}"))["id"])

    return list(await asyncio.gather(*(one(i) for i in range(count))))


async def _wait_for_next_second() -> None:
    await asyncio.sleep(1.05 - time.time() % 1)


async def test_paging_120_emails_50_at_a_time_across_buckets(make_server: ServerFactory) -> None:
    api, app = await make_server(mail_bucket="1s")
    alice, bob = await api.sign_up("pga"), await api.sign_up("pgb")
    sent: list[str] = []
    for wave in range(3):  # three waves, each in its own one-second bucket at least
        await _wait_for_next_second()
        sent += await _send_many(api, alice, bob, 40, f"w{wave}-")
    buckets = await app[SERVICES].db.execute_all(
        "SELECT bucket FROM email_folder_buckets WHERE username = ? AND label = ?", (bob.login, "inbox")
    )
    assert len(buckets) >= 3

    pages: list[list[str]] = []
    after = None
    has_next = True
    while has_next:
        data = await api.ok(FOLDER, {"label": "inbox", "first": 50, "after": after}, token=bob.token)
        connection = data["me"]["folder"]["emails"]
        pages.append([key(e["node"]["id"]) for e in connection["edges"]])
        has_next, after = connection["pageInfo"]["hasNextPage"], connection["pageInfo"]["endCursor"]
        if len(pages) == 1:
            # Mail arriving while paging lands before the first page, never inside later ones.
            await _send_many(api, alice, bob, 5, "late-")
    assert [len(p) for p in pages] == [50, 50, 20]
    seen = [i for page in pages for i in page]
    assert len(set(seen)) == 120 and set(seen) == set(sent)
    times = [uuid.UUID(i).time for i in seen]  # folder ids are the stored UUIDs
    assert times == sorted(times, reverse=True)  # newest first

    # The listing from the top now starts with the late arrivals.
    data = await api.ok(FOLDER, {"label": "inbox", "first": 100}, token=bob.token)
    top = [key(e["node"]["id"]) for e in data["me"]["folder"]["emails"]["edges"]]
    assert top[5:] == seen[:95] and len(data["me"]["folder"]["emails"]["edges"]) == 100
    assert data["me"]["folder"]["unreadCount"] == 125


async def test_a_folder_page_costs_the_same_for_5_and_50_senders(api: Api) -> None:
    bob = await api.sign_up("stmt")
    senders = await asyncio.gather(*(api.sign_up("snd") for _ in range(50)))
    for sender in senders:
        await send(api, sender, [bob.login], f"from {sender.login}")

    small = await api.call(FOLDER, {"label": "inbox", "first": 5}, token=bob.token)
    large = await api.call(FOLDER, {"label": "inbox", "first": 50}, token=bob.token)
    assert not small.errors and not large.errors
    large_edges = large.result["me"]["folder"]["emails"]["edges"]
    assert len(large_edges) == 50
    assert {e["node"]["from"]["login"] for e in large_edges} == {s.login for s in senders}
    assert all(e["node"]["from"]["firstname"] == "Test" for e in large_edges)
    assert small.statements == large.statements
    # session, folder's counters, bucket index, one bucket, one batched user read
    assert large.statements <= 5


async def test_folders_cost_the_same_for_2_and_12_folders(api: Api) -> None:
    few, many = await api.sign_up("fq"), await api.sign_up("fq")
    for i in range(10):
        await api.ok(
            "mutation($l: String!) { createFolder(label: $l) { label } }",
            {"l": f"f{i}"},
            token=many.token,
        )
    a = await api.call(FOLDERS, token=few.token)
    b = await api.call(FOLDERS, token=many.token)
    assert len(b.result["me"]["folders"]) == 12
    assert a.statements == b.statements


async def test_after_and_first_are_validated(api: Api, app: web.Application) -> None:
    bob = await api.sign_up("pv")
    bad = await api.error(FOLDER, {"label": "inbox", "after": "garbage!"}, token=bob.token)
    assert bad["extensions"] == {"code": "BAD_USER_INPUT", "field": "after"}
    too_many = await api.error(FOLDER, {"label": "inbox", "first": 101}, token=bob.token)
    assert too_many["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    negative = await api.error(FOLDER, {"label": "inbox", "first": -1}, token=bob.token)
    assert negative["extensions"] == {"code": "BAD_USER_INPUT", "field": "first"}
    empty = await api.ok(FOLDER, {"label": "inbox", "first": 0}, token=bob.token)
    assert empty["me"]["folder"]["emails"]["edges"] == []
