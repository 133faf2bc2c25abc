"""Unread counts under concurrency: many real clients at once, on two gateway instances.

Two instances over the same keyspace do not share their in-process write queues,
so their lightweight transactions genuinely race on the same Cassandra rows.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from aiohttp import web

from tests.conftest import ServerFactory
from tests.support.client import Account, Api, Response
from tests.support.messenger import (
    MAIN_VIEW,
    MARK_READ,
    SEND,
    concurrent_sends_count_exactly,
    partners,
    store_of,
    unread_of,
)


async def test_ten_senders_thirty_concurrent_sends_each_count_exactly(
    api: Api, app: web.Application, make_server: ServerFactory
) -> None:
    other_api, other_app = await make_server()
    await concurrent_sends_count_exactly(api, other_api)
    # The per-partition write queues are gone once nobody waits on them.
    assert len(store_of(app).unread.locks) == len(store_of(other_app).unread.locks) == 0


async def test_sends_racing_mark_reads_lose_nothing_and_never_go_negative(
    api: Api, make_server: ServerFactory
) -> None:
    other_api, _ = await make_server()
    instances = itertools.cycle([api, other_api])
    reader = await api.sign_up("reader")
    senders = await asyncio.gather(*(api.sign_up(f"chatty{n}") for n in range(3)))

    def send_call(sender: Account, n: int) -> Any:
        return next(instances).call(SEND, {"to": reader.login, "content": f"race {n}"}, token=sender.token)

    race: list[Any] = []
    for n in range(40):
        race.append(send_call(senders[n % 3], n))
        if n % 3 == 0:
            race.append(next(instances).call(MARK_READ, {"with": senders[n % 3].login}, token=reader.token))
        if n % 4 == 0:
            race.append(next(instances).call(MAIN_VIEW, token=reader.token))
    responses: list[Response] = await asyncio.gather(*race)
    assert [r.errors for r in responses if r.errors] == []

    observed: list[int] = []
    for response in responses:
        data = response.data or {}
        if "markConversationRead" in data:
            assert data["markConversationRead"]["unreadCount"] == 0
            assert data["markConversationRead"]["unreadSince"] is None
        if "me" in data:
            observed.extend(p["unreadCount"] for p in data["me"]["talkPartners"]["nodes"])
    view = await partners(api, reader)
    observed.extend(p["unreadCount"] for p in view)
    assert all(0 <= count <= 40 for count in observed), observed
    assert sum(p["unreadCount"] for p in view) <= 40

    # Whatever the race left, a final mark-read clears it, and K sends count K.
    await asyncio.gather(
        *(next(instances).ok(MARK_READ, {"with": s.login}, token=reader.token) for s in senders)
    )
    assert unread_of(await partners(api, reader)) == {s.login: 0 for s in senders}
    assert all(p["unreadSince"] is None for p in await partners(api, reader))
    k = {senders[0].login: 7, senders[1].login: 13, senders[2].login: 21}
    more = await asyncio.gather(*(send_call(s, n) for s in senders for n in range(k[s.login])))
    assert [r.errors for r in more if r.errors] == []
    view = await partners(api, reader)
    assert unread_of(view) == k
    assert all(p["unreadSince"] is not None for p in view)
