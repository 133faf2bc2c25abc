"""The data of the scale benchmark: the hottest partitions, at 1x and at 100x.

Every bucketed timeline is written at one density: ``per_bucket`` items per 31
days, counted back from now. The 1x data is the newest month of the 100x data,
so the first page reads the same buckets at both sizes, and the deep page (a
cursor built for an item 90 % down the history, moved so that the page and its
look-ahead item stay in one bucket) reads one bucket slice at both sizes.

Items go in through the stores' own write paths (``write_message``, ``refile``,
``MemberStore.add``) or the stores' statements, at high concurrency.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from bench.harness import Target, in_parallel
from gateway.blog.store import PostStore
from gateway.db import clock
from gateway.db.clock import micros_of
from gateway.db.timeline import Position, bucket_of_timeuuid
from gateway.graph.pagination import position_cursor
from gateway.mail.records import EmailRecord, Placement
from gateway.mail.store import MailStore
from gateway.messenger.activity_store import Mark
from gateway.messenger.cursors import mark_cursor
from gateway.messenger.records import MessageRecord, conversation_id
from gateway.messenger.store import MessengerStore
from gateway.rooms.cursors import login_cursor
from gateway.rooms.member_store import MemberStore
from gateway.rooms.store import RoomStore
from gateway.users.records import UserRecord
from gateway.users.store import UserStore

LOAD_CONCURRENCY = 128
MONTH = timedelta(days=31)
#: How far down the history the deep page starts.
DEEP = 0.9

_MESSAGE = (
    "INSERT INTO direct_messages (conversation_id, bucket, message_id, sender, recipient,"
    " content, client_message_id) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_MESSAGE_BUCKET = "INSERT INTO direct_message_buckets (conversation_id, bucket) VALUES (?, ?)"
_POST = "INSERT INTO posts_by_tag (tag, bucket, id, slug, title, author, tags) VALUES (?, ?, ?, ?, ?, ?, ?)"
_POST_BUCKET = "INSERT INTO post_buckets_by_tag (tag, bucket) VALUES (?, ?)"


@dataclass(frozen=True)
class Scene:
    """What one case's requests need at one size: who asks, with what, and the deep cursor."""

    token: str | None
    variables: dict[str, Any]
    deep_cursor: str
    items: int


def timeline_ids(count: int, per_bucket: int) -> list[UUID]:
    """``count`` timeuuids, newest first, ``per_bucket`` per 31 days back from now."""
    now = datetime.now(UTC)
    step = MONTH / per_bucket
    return [clock.new_timeuuid(int((now - step * (n + 1)).timestamp() * 1e9)) for n in range(count)]


def deep_position(ids: list[UUID], granularity: str, page: int) -> Position:
    """The position of an item ``DEEP`` down the newest-first ``ids``, moved towards the
    newest end until the next ``page + 1`` items share its bucket."""
    index = int(len(ids) * DEEP)
    while bucket_of_timeuuid(ids[index], granularity) != bucket_of_timeuuid(
        ids[index + page + 1], granularity
    ):
        index -= 1
    return Position(bucket_of_timeuuid(ids[index], granularity), ids[index])


async def create_users(target: Target, logins: list[str]) -> None:
    """Users written on the driver (signing thousands up through argon2 would measure argon2)."""
    users = UserStore(target.db, target.settings)

    async def one(i: int) -> None:
        login = logins[i]
        await users.create(UserRecord(login, "Scale", login, f"{login}@example.com", "", clock.now(), ""))

    await in_parallel(len(logins), one, LOAD_CONCURRENCY)


async def conversation(target: Target, label: str, count: int, per_bucket: int, page: int) -> Scene:
    a, b = f"conv{label}a", f"conv{label}b"
    token = await target.sign_up(a)
    await target.sign_up(b)
    conversation = conversation_id(a, b)
    granularity = target.settings.messenger_bucket
    ids = timeline_ids(count, per_bucket)

    async def one(n: int) -> None:
        bucket = bucket_of_timeuuid(ids[n], granularity)
        await target.db.execute(_MESSAGE, (conversation, bucket, ids[n], a, b, f"message {n}", ""))

    await in_parallel(count, one, LOAD_CONCURRENCY)
    buckets = {bucket_of_timeuuid(i, granularity) for i in ids}
    await asyncio.gather(*(target.db.execute(_MESSAGE_BUCKET, (conversation, bucket)) for bucket in buckets))
    deep = position_cursor(deep_position(ids, granularity, page))
    return Scene(token, {"with": b}, deep, count)


async def mailbox(
    target: Target, label: str, count: int, per_bucket: int, page: int, senders: list[str]
) -> Scene:
    reader = f"mail{label}"
    token = await target.sign_up(reader)
    store = MailStore(target.db, target.settings)
    ids = timeline_ids(count, per_bucket)

    async def one(n: int) -> None:
        email = EmailRecord(ids[n], senders[n % len(senders)], [reader], f"subject {n}", "", [])
        await store.refile(reader, email, Placement.delivered(email, reader))

    await in_parallel(count, one, LOAD_CONCURRENCY)
    deep = position_cursor(deep_position(ids, store.granularity, page))
    return Scene(token, {}, deep, count)


async def tag(
    target: Target, label: str, count: int, per_bucket: int, page: int, authors: list[str]
) -> Scene:
    name = f"scale-{label}"
    granularity = PostStore(target.db, target.settings).granularity
    ids = timeline_ids(count, per_bucket)

    async def one(n: int) -> None:
        bucket = bucket_of_timeuuid(ids[n], granularity)
        params = (name, bucket, ids[n], f"{name}-{n}", f"Post {n}", authors[n % len(authors)], [name])
        await target.db.execute(_POST, params)

    await in_parallel(count, one, LOAD_CONCURRENCY)
    buckets = {bucket_of_timeuuid(i, granularity) for i in ids}
    await asyncio.gather(*(target.db.execute(_POST_BUCKET, (name, bucket)) for bucket in buckets))
    deep = position_cursor(deep_position(ids, granularity, page))
    return Scene(None, {"tag": name}, deep, count)


async def talk_partners(target: Target, label: str, partners: list[str], page: int) -> Scene:
    """One message from each partner to the owner, a minute apart (one activity slot each
    at the default ``GATEWAY_MESSENGER_ACTIVITY_SLOT``), through the store's send batch."""
    owner = f"owner{label}"
    token = await target.sign_up(owner)
    store = MessengerStore(target.db, target.settings)
    now = datetime.now(UTC)
    ids = [
        clock.new_timeuuid(int((now - timedelta(minutes=n + 1)).timestamp() * 1e9))
        for n in range(len(partners))
    ]

    async def one(n: int) -> None:
        await store.write_message(MessageRecord(ids[n], partners[n], owner, f"hello {n}", ""))

    await in_parallel(len(partners), one, LOAD_CONCURRENCY)
    marks = sorted(
        (Mark(micros_of(ids[n]), partners[n], store.activity.slot_of(ids[n])) for n in range(len(partners))),
        reverse=True,
    )
    deep = marks[min(int(len(marks) * DEEP), len(marks) - page - 2)]
    return Scene(token, {}, mark_cursor(deep), len(partners))


async def room(target: Target, label: str, members: list[str], page: int) -> Scene:
    """A room whose members join through ``MemberStore.add`` (the join's own LWT)."""
    creator = f"roomer{label}"
    token = await target.sign_up(creator)
    name = f"scale-room-{label}"
    await target.graphql("mutation($n: String!) { createRoom(name: $n) { name } }", {"n": name}, token)
    record = await RoomStore(target.db, target.settings).get(name)
    assert record is not None
    store = MemberStore(target.db, target.settings)
    joined = clock.now()

    async def one(n: int) -> None:
        await store.add(record.id, members[n], joined)

    await in_parallel(len(members), one, LOAD_CONCURRENCY)
    await store.count_by(record.id, len(members))
    ordered = sorted({creator, *members})
    deep = ordered[min(int(len(ordered) * DEEP), len(ordered) - page - 2)]
    return Scene(token, {"n": name}, login_cursor(deep), len(ordered))
