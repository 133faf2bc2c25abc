"""Idempotency keys of creating mutations, and what UNAVAILABLE says about retrying.

The lost-answer tests put a gateway behind a TCP proxy that lets the mutation's
write reach Cassandra, withholds Cassandra's answer, and then cuts the
connection: the client gets UNAVAILABLE for a write that was applied. Its retry
with the same key must store nothing twice and move every counter once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from gateway.messenger.records import conversation_id
from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.conftest import ServerFactory
from tests.support.client import Api, Response
from tests.support.ids import key as stored_id
from tests.support.tcp_proxy import TcpProxy

PUBLISH = """mutation($input: PostInput!) { publishPost(input: $input) { slug title } }"""
COMMENT = """mutation($slug: String!, $input: CommentInput!) {
  addComment(slug: $slug, input: $input) { id text } }"""
POST_STATS = """query($slug: String!) { post(slug: $slug) {
  commentCount comments(first: 50) { nodes { id text } } } }"""
AUTHOR_STATS = """query($login: String!) { user(login: $login) {
  postCount posts(first: 10) { nodes { slug } } } }"""
CREATE_ROOM = """mutation($name: String!) { createRoom(name: $name) { name } }"""
POST_ROOM = """mutation($room: String!, $content: String!, $key: String) {
  postRoomMessage(room: $room, content: $content, clientMutationId: $key) { id content } }"""
ROOM_MESSAGES = (
    """query($name: String!) { room(name: $name) { messages(first: 50) { nodes { id content } } } }"""
)
SEND_EMAIL = """mutation($input: EmailInput!) { sendEmail(input: $input) { id subject } }"""
INBOX = """{ me { folder(label: "inbox") { unreadCount emails(first: 50) { nodes { id subject } } } } }"""
SENT = """{ me { folder(label: "sent") { emails(first: 50) { nodes { id subject } } } } }"""
SEND_MESSAGE = """mutation($to: String!, $content: String!, $key: String) {
  sendMessage(to: $to, content: $content, clientMessageId: $key) { id content } }"""
CONVERSATION = """query($with: String!) { me { conversation(with: $with) {
  unreadCount messages(first: 50) { nodes { id content } } } } }"""


@pytest.fixture
async def flaky(make_server: ServerFactory, base_settings: Settings) -> AsyncIterator[tuple[Api, TcpProxy]]:
    """A gateway whose Cassandra connection goes through a proxy the test can cut."""
    proxy = TcpProxy("127.0.0.1", base_settings.cassandra_port)
    await proxy.start()
    api, _ = await make_server(contact_points=("127.0.0.1",), cassandra_port=proxy.port, request_timeout=2.0)
    yield api, proxy
    await proxy.cut()


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    for _ in range(500):
        if await check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


async def answer_lost(
    api: Api,
    proxy: TcpProxy,
    query: str,
    variables: dict[str, Any],
    token: str | None,
    marker: str,
    applied: Callable[[], Awaitable[bool]],
) -> tuple[Response, Response]:
    """Send the mutation; once the write carrying ``marker`` reached Cassandra and is
    applied, cut the connection before the gateway hears back. Then bring Cassandra
    back and retry the very same request. Returns (first answer, retry's answer)."""
    sent = proxy.hold_answers_after(marker.encode())
    first = asyncio.create_task(api.call(query, variables, token=token))
    await asyncio.wait_for(sent.wait(), timeout=30)
    await eventually(applied, "the write reached Cassandra")
    await proxy.cut()
    lost = await first
    await proxy.start()
    for _ in range(120):
        retry = await api.call(query, variables, token=token)
        if retry.codes != ["UNAVAILABLE"]:
            return lost, retry
        await asyncio.sleep(0.25)
    raise AssertionError("the gateway never reconnected")


def key() -> str:
    """A client's idempotency key (never the marker: the key travels in the claim, first)."""
    return str(uuid.uuid4())


def assert_unavailable_retry_safe(response: Response) -> None:
    assert response.codes == ["UNAVAILABLE"], response.errors
    assert response.errors[0]["extensions"]["retrySafe"] is True


async def test_comment_retried_after_a_lost_answer_is_stored_and_counted_once(
    api: Api, app: web.Application, flaky: tuple[Api, TcpProxy]
) -> None:
    via_proxy, proxy = flaky
    author = await api.sign_up("idemblog")
    slug = f"idem-{uuid.uuid4().hex[:10]}"
    await api.ok(PUBLISH, {"input": {"slug": slug, "title": "Retry me", "body": "b"}}, token=author.token)
    marker = f"comment-{uuid.uuid4().hex}"
    variables = {
        "slug": slug,
        "input": {"name": "Anon", "email": "anon@example.com", "text": marker, "clientMutationId": key()},
    }

    async def stored() -> bool:
        post = (await api.ok(POST_STATS, {"slug": slug}))["post"]
        return [c["text"] for c in post["comments"]["nodes"]] == [marker]

    lost, retry = await answer_lost(via_proxy, proxy, COMMENT, variables, None, marker, stored)
    assert_unavailable_retry_safe(lost)
    assert not retry.errors, retry.errors
    post = (await api.ok(POST_STATS, {"slug": slug}))["post"]
    assert post["comments"]["nodes"] == [retry.result["addComment"]]
    assert post["commentCount"] == 1
    # Once more with the same key: the same comment, nothing moves.
    again = (await api.ok(COMMENT, variables))["addComment"]
    assert again == retry.result["addComment"]
    assert (await api.ok(POST_STATS, {"slug": slug}))["post"] == post


async def test_post_retried_after_a_lost_answer_is_published_and_counted_once(
    api: Api, app: web.Application, flaky: tuple[Api, TcpProxy]
) -> None:
    via_proxy, proxy = flaky
    author = await api.sign_up("idempost")
    marker = f"post-{uuid.uuid4().hex}"
    slug = f"p-{uuid.uuid4().hex[:12]}"
    variables = {"input": {"slug": slug, "title": marker, "body": "b", "clientMutationId": key()}}
    db = app[SERVICES].db

    async def stored() -> bool:
        return (await db.execute("SELECT slug FROM posts WHERE slug = ?", (slug,))).one() is not None

    lost, retry = await answer_lost(via_proxy, proxy, PUBLISH, variables, author.token, marker, stored)
    assert_unavailable_retry_safe(lost)
    assert not retry.errors, retry.errors
    assert retry.data == {"publishPost": {"slug": slug, "title": marker}}
    stats = (await api.ok(AUTHOR_STATS, {"login": author.login}))["user"]
    assert stats == {"postCount": 1, "posts": {"nodes": [{"slug": slug}]}}
    # The key names the first post even if the retry names another slug.
    other = {"input": {**variables["input"], "slug": f"{slug}-x"}}
    assert (await api.ok(PUBLISH, other, token=author.token))["publishPost"]["slug"] == slug
    assert (await api.ok(AUTHOR_STATS, {"login": author.login}))["user"] == stats


async def test_email_retried_after_a_lost_answer_is_delivered_and_counted_once(
    api: Api, app: web.Application, flaky: tuple[Api, TcpProxy]
) -> None:
    via_proxy, proxy = flaky
    sender, recipient = await api.sign_up("idemfrom"), await api.sign_up("idemto")
    marker = f"mail-{uuid.uuid4().hex}"
    variables = {
        "input": {"to": [recipient.login], "subject": marker, "body": "b", "clientMutationId": key()}
    }
    db = app[SERVICES].db

    async def stored() -> bool:
        rows = await db.execute_all(
            "SELECT subject FROM emails WHERE sender = ? ALLOW FILTERING", (sender.login,)
        )
        return any(r["subject"] == marker for r in rows)

    lost, retry = await answer_lost(via_proxy, proxy, SEND_EMAIL, variables, sender.token, marker, stored)
    assert_unavailable_retry_safe(lost)
    assert not retry.errors, retry.errors
    inbox = (await api.ok(INBOX, token=recipient.token))["me"]["folder"]
    sent = retry.result["sendEmail"]
    listed = [(stored_id(n["id"]), n["subject"]) for n in inbox["emails"]["nodes"]]
    assert listed == [(stored_id(sent["id"]), sent["subject"])]
    assert inbox["unreadCount"] == 1
    again = (await api.ok(SEND_EMAIL, variables, token=sender.token))["sendEmail"]
    assert again == retry.result["sendEmail"]
    assert (await api.ok(INBOX, token=recipient.token))["me"]["folder"] == inbox


async def test_an_email_whose_retry_lost_its_answer_while_filing_is_filed_and_counted_by_the_next(
    api: Api, app: web.Application, flaky: tuple[Api, TcpProxy]
) -> None:
    """The first request stores the email and loses its answer; the retry loses its own
    while filing the email in the inbox. The third request must still file it everywhere
    (the sender's sent folder too) and count it once: the key must not count as done for
    an email not filed."""
    via_proxy, proxy = flaky
    sender, recipient = await api.sign_up("refile"), await api.sign_up("refileto")
    marker = f"mail-{uuid.uuid4().hex}"
    variables = {
        "input": {"to": [recipient.login], "subject": marker, "body": "b", "clientMutationId": key()}
    }
    db = app[SERVICES].db

    async def stored() -> bool:
        rows = await db.execute_all(
            "SELECT subject FROM emails WHERE sender = ? ALLOW FILTERING", (sender.login,)
        )
        return any(r["subject"] == marker for r in rows)

    async def in_inbox() -> bool:
        rows = await db.execute_all(
            "SELECT subject FROM emails_by_user_folder WHERE username = ? AND label = 'inbox'"
            " ALLOW FILTERING",
            (recipient.login,),
        )
        return any(r["subject"] == marker for r in rows)

    for applied in (stored, in_inbox):  # the email's own row, then (retried) its inbox row
        while True:
            sent = proxy.hold_answers_after(marker.encode())
            attempt = asyncio.create_task(via_proxy.call(SEND_EMAIL, variables, token=sender.token))
            went = asyncio.create_task(sent.wait())
            await asyncio.wait({attempt, went}, return_when=asyncio.FIRST_COMPLETED)
            went.cancel()
            if sent.is_set():
                break
            assert_unavailable_retry_safe(await attempt)  # not reconnected yet: nothing was sent
            await asyncio.sleep(0.25)
        await eventually(applied, "the write reached Cassandra")
        await proxy.cut()
        assert_unavailable_retry_safe(await attempt)
        await proxy.start()

    done = (await api.ok(SEND_EMAIL, variables, token=sender.token))["sendEmail"]
    inbox = (await api.ok(INBOX, token=recipient.token))["me"]["folder"]
    assert [(stored_id(n["id"]), n["subject"]) for n in inbox["emails"]["nodes"]] == [
        (stored_id(done["id"]), marker)
    ]
    assert inbox["unreadCount"] == 1
    outbox = (await api.ok(SENT, token=sender.token))["me"]["folder"]["emails"]["nodes"]
    assert [stored_id(n["id"]) for n in outbox] == [stored_id(done["id"])]


async def test_room_message_retried_after_a_lost_answer_is_stored_once(
    api: Api, app: web.Application, flaky: tuple[Api, TcpProxy]
) -> None:
    via_proxy, proxy = flaky
    member = await api.sign_up("idemroom")
    room = f"idem{uuid.uuid4().hex[:12]}"
    await api.ok(CREATE_ROOM, {"name": room}, token=member.token)
    marker = f"room-{uuid.uuid4().hex}"
    variables = {"room": room, "content": marker, "key": key()}

    async def stored() -> bool:
        data = await api.ok(ROOM_MESSAGES, {"name": room}, token=member.token)
        return any(m["content"] == marker for m in data["room"]["messages"]["nodes"])

    lost, retry = await answer_lost(via_proxy, proxy, POST_ROOM, variables, member.token, marker, stored)
    assert_unavailable_retry_safe(lost)
    assert not retry.errors, retry.errors
    messages = (await api.ok(ROOM_MESSAGES, {"name": room}, token=member.token))["room"]["messages"]["nodes"]
    assert [m for m in messages if m["content"] == marker] == [retry.result["postRoomMessage"]]


async def test_direct_message_retried_after_a_lost_answer_is_stored_and_counted_once(
    api: Api, app: web.Application, flaky: tuple[Api, TcpProxy]
) -> None:
    via_proxy, proxy = flaky
    sender, recipient = await api.sign_up("idemdm"), await api.sign_up("idemdmto")
    marker = f"dm-{uuid.uuid4().hex}"
    variables = {"to": recipient.login, "content": marker, "key": key()}
    db = app[SERVICES].db

    async def stored() -> bool:
        rows = await db.execute_all(
            "SELECT content FROM direct_messages WHERE conversation_id = ? ALLOW FILTERING",
            (conversation_id(sender.login, recipient.login),),
        )
        return any(r["content"] == marker for r in rows)

    lost, retry = await answer_lost(via_proxy, proxy, SEND_MESSAGE, variables, sender.token, marker, stored)
    assert_unavailable_retry_safe(lost)
    assert not retry.errors, retry.errors
    conversation = (await api.ok(CONVERSATION, {"with": sender.login}, token=recipient.token))["me"][
        "conversation"
    ]
    assert conversation["messages"]["nodes"] == [retry.result["sendMessage"]]
    assert conversation["unreadCount"] == 1


async def test_retry_safe_is_false_for_unkeyed_mutations_and_true_for_queries(
    api: Api, flaky: tuple[Api, TcpProxy]
) -> None:
    via_proxy, proxy = flaky
    member = await api.sign_up("unsafe")
    room = f"unsafe{uuid.uuid4().hex[:12]}"
    await api.ok(CREATE_ROOM, {"name": room}, token=member.token)
    await via_proxy.ok(ROOM_MESSAGES, {"name": room}, token=member.token)  # the proxied gateway is connected
    await proxy.cut()
    unkeyed = await via_proxy.call(POST_ROOM, {"room": room, "content": "x"}, token=member.token)
    assert unkeyed.codes == ["UNAVAILABLE"]
    assert unkeyed.errors[0]["extensions"]["retrySafe"] is False
    assert "may or may not have been applied" in unkeyed.errors[0]["message"]
    keyed = await via_proxy.call(POST_ROOM, {"room": room, "content": "x", "key": "k1"}, token=member.token)
    assert keyed.errors[0]["extensions"] == {"code": "UNAVAILABLE", "retrySafe": True}
    query = await via_proxy.call(ROOM_MESSAGES, {"name": room}, token=member.token)
    assert query.errors[0]["extensions"] == {"code": "UNAVAILABLE", "retrySafe": True}


async def test_keys_are_validated_and_scoped(api: Api) -> None:
    member, other = await api.sign_up("keyscope"), await api.sign_up("keyother")
    room = f"scope{uuid.uuid4().hex[:12]}"
    await api.ok(CREATE_ROOM, {"name": room}, token=member.token)
    await api.ok("mutation($n: String!) { joinRoom(name: $n) { name } }", {"n": room}, token=other.token)
    too_long = await api.error(
        POST_ROOM, {"room": room, "content": "x", "key": "k" * 101}, token=member.token
    )
    assert too_long["extensions"] == {"code": "BAD_USER_INPUT", "field": "clientMutationId"}
    empty = await api.error(POST_ROOM, {"room": room, "content": "x", "key": ""}, token=member.token)
    assert empty["extensions"] == {"code": "BAD_USER_INPUT", "field": "clientMutationId"}
    # The same key from two users: two messages (keys belong to their sender).
    mine = await api.ok(POST_ROOM, {"room": room, "content": "a", "key": "shared"}, token=member.token)
    theirs = await api.ok(POST_ROOM, {"room": room, "content": "b", "key": "shared"}, token=other.token)
    assert mine["postRoomMessage"]["id"] != theirs["postRoomMessage"]["id"]
    again = await api.ok(POST_ROOM, {"room": room, "content": "a", "key": "shared"}, token=member.token)
    assert again == mine
