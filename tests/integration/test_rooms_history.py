"""Room history across time buckets, and what pages cost in CQL statements."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.server.app import SERVICES
from tests.conftest import ServerFactory
from tests.support.client import Account, Api
from tests.support.rooms import HISTORY, JOIN, create_room, history, post

#: A bucket so wide (about 31 years) that no test run straddles two: statement
#: counts then compare pages that read the same number of buckets.
ONE_BUCKET = "1000000000s"


async def _page(api: Api, account: Account, name: str, first: int, after: str | None) -> dict[str, Any]:
    data = await api.ok(HISTORY, {"n": name, "first": first, "after": after}, token=account.token)
    return data["room"]["messages"]


async def test_history_pages_newest_first_across_at_least_three_buckets(make_server: ServerFactory) -> None:
    api, app = await make_server(room_bucket="1s")
    alice = await api.sign_up("alice")
    name = await create_room(api, alice)
    posted: list[str] = []
    for group in range(4):
        if group:
            await asyncio.sleep(1.1)  # the next one-second bucket
        for i in range(3):
            posted.append((await post(api, alice, name, f"g{group} m{i}"))["content"])

    db = app[SERVICES].db
    room = (await db.execute("SELECT id FROM rooms WHERE name = ?", (name,))).one()
    assert room is not None
    room_id = room["id"]
    index = await db.execute("SELECT bucket FROM room_message_buckets WHERE room_id = ?", (room_id,))
    buckets = [r["bucket"] for r in index.rows]
    assert len(buckets) >= 4
    assert buckets == sorted(buckets, reverse=True)

    expected = [*reversed(posted), f"{alice.login} created the room"]
    for first in (1, 2, 5, 100):
        contents = [m["content"] for m in await history(api, alice, name, first=first)]
        assert contents == expected, first

    # A page never repeats or skips because something was posted meanwhile.
    page = await _page(api, alice, name, 4, None)
    assert [e["node"]["content"] for e in page["edges"]] == expected[:4]
    await post(api, alice, name, "posted while paging")
    rest = await _page(api, alice, name, 100, page["pageInfo"]["endCursor"])
    assert [e["node"]["content"] for e in rest["edges"]] == expected[4:]
    assert rest["pageInfo"] == {"hasNextPage": False, "endCursor": rest["edges"][-1]["cursor"]}
    # Any edge's cursor resumes right after that edge, across bucket boundaries.
    middle = await _page(api, alice, name, 100, page["edges"][1]["cursor"])
    assert [e["node"]["content"] for e in middle["edges"]] == expected[2:]
    # The gateway on the default day buckets reads the same history.
    default_api_history = await history(api, alice, name)
    assert default_api_history[0]["content"] == "posted while paging"


async def test_page_of_50_messages_by_50_authors_costs_what_a_page_of_5_costs(
    make_server: ServerFactory,
) -> None:
    api, _ = await make_server(room_bucket=ONE_BUCKET)
    host = await api.sign_up("host")
    name = await create_room(api, host)
    authors = await asyncio.gather(*(api.sign_up("author") for _ in range(50)))
    await asyncio.gather(*(api.ok(JOIN, {"n": name}, token=a.token) for a in authors))
    await asyncio.gather(*(post(api, a, name, f"hello from {a.login}") for a in authors))

    small = await api.call(HISTORY, {"n": name, "first": 5}, token=host.token)
    large = await api.call(HISTORY, {"n": name, "first": 50}, token=host.token)
    assert not small.errors and not large.errors
    large_authors = {e["node"]["author"]["login"] for e in large.result["room"]["messages"]["edges"]}
    assert large_authors == {a.login for a in authors}
    assert len(small.result["room"]["messages"]["edges"]) == 5
    assert small.statements == large.statements
    # room, the viewer's participant row, bucket index, one bucket, one batched read of the
    # authors (the session is known to the process since the sign-up)
    assert large.statements == 5
