"""relay-compiler (tests/js, pinned) compiles the Relay documents of tests/js/relay against the
checked-in schema.graphql: a `@refetchable` fragment on `Conversation`, `@connection`s on a
conversation's and a room's messages and on the talk partners, paged both ways (so
`usePaginationFragment`'s `loadNext` and `loadPrevious` work), and the mutations and
subscriptions that prepend to them (`@prependNode`). Then the gateway answers every
operation the compiler wrote, with the variables Relay sends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from gql import GraphQLRequest

from gateway.messenger.events import user_messages_channel
from gateway.rooms.events import room_channel
from gateway.server.app import SERVICES
from tests.support.client import Account, Api
from tests.support.js_runner import JS

RELAY = JS / "relay"
COMPILER = JS / "node_modules" / "relay-compiler" / "cli.js"
SCHEMA = Path(__file__).parents[2] / "schema.graphql"

#: Every operation the documents define, the four pagination and refetch queries the
#: compiler derives from the fragments among them.
OPERATIONS = {
    "ChatScreenMainViewQuery",
    "ChatScreenConversationQuery",
    "ChatScreenRoomQuery",
    "ChatScreenSendMutation",
    "ChatScreenMarkReadMutation",
    "ChatScreenPostMutation",
    "ChatScreenReceivedSubscription",
    "ChatScreenRoomMessagesSubscription",
    "ConversationHeaderRefetchQuery",
    "ConversationMessagesPaginationQuery",
    "TalkPartnerListPaginationQuery",
    "RoomMessagesPaginationQuery",
}
FRAGMENTS = {
    "ConversationHeader_conversation",
    "ConversationMessages_conversation",
    "TalkPartnerList_me",
    "RoomMessages_room",
}
#: What Relay sends for `@prependNode(connections: $connections)`: the variable is the
#: operation's, so it goes to the server too (which has no use for it).
CONNECTIONS = {"connections": ["client:root:__ConversationMessages_messages_connection"]}
EVENT_TIMEOUT = 20


async def relay_compile(workdir: Path, schema: str) -> tuple[int, str, dict[str, str]]:
    """relay-compiler over tests/js/relay with ``schema``, writing into ``workdir``: its exit
    code, what it printed (colours removed) and the operation text of each artifact."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node (v20 or newer) is not on PATH: relay-compiler runs in Node")
    if not COMPILER.is_file():
        pytest.fail(
            "tests/js has no relay-compiler: run the suite with scripts/test, which runs npm ci there"
        )
    (workdir / "schema.graphql").write_text(schema)
    (workdir / "generated").mkdir()
    config = {
        "src": str(RELAY),
        "schema": "schema.graphql",
        "artifactDirectory": "generated",
        "language": "javascript",
    }
    (workdir / "relay.config.json").write_text(json.dumps(config))
    process = await asyncio.create_subprocess_exec(
        node,
        str(COMPILER),
        "relay.config.json",
        "--noWatchman",
        "--output",
        "quiet-with-errors",
        cwd=workdir,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    texts = {}
    for artifact in (workdir / "generated").glob("*.graphql.js"):
        name = artifact.name.removesuffix(".graphql.js")
        found = re.search(r'^\s*"text": (".*"),?$', artifact.read_text(), re.MULTILINE)
        texts[name] = json.loads(found.group(1)) if found else ""
    return process.returncode, re.sub(r"\x1b\[[0-9;]*m", "", output.decode()), texts


async def test_documents_compile_against_the_schema(tmp_path: Path) -> None:
    code, output, texts = await relay_compile(tmp_path, SCHEMA.read_text())
    print(output)
    assert code == 0, output
    assert "ERROR" not in output
    assert set(texts) == OPERATIONS | FRAGMENTS
    assert {name for name, text in texts.items() if text} == OPERATIONS
    # The messages fragment pages both ways: loadNext with first/after, loadPrevious with
    # last/before, through node(id:) of the conversation.
    messages = (tmp_path / "generated" / "ConversationMessages_conversation.graphql.js").read_text()
    assert '"direction": "bidirectional"' in messages
    assert re.search(r'"backward": \{\s*"count": "last",\s*"cursor": "before"\s*\}', messages)
    assert re.search(r'"forward": \{\s*"count": "first",\s*"cursor": "after"\s*\}', messages)
    assert "node(id: $id)" in texts["ConversationMessagesPaginationQuery"]
    assert "node(id: $id)" in texts["ConversationHeaderRefetchQuery"]


def _not_a_node(schema: str) -> str:
    assert schema.count("type Conversation implements Node {") == 1
    return schema.replace("type Conversation implements Node {", "type Conversation {")


def _messages_forward_only(schema: str) -> str:
    """``Conversation.messages`` without its ``last`` and ``before`` arguments (each with
    its description)."""
    head = schema.index("type Conversation implements Node {")
    start = schema.index("  messages(", head)
    end = schema.index("): DirectMessageConnection!", start)
    arguments = re.sub(r'\n    """[^"]*"""\n    (last|before): [^\n]*\n', "\n", schema[start:end])
    assert "last:" not in arguments and "before:" not in arguments and "first:" in arguments
    return schema[:start] + arguments + schema[end:]


@pytest.mark.parametrize(
    ("change", "error"),
    [
        # Without Node, no @refetchable fragment on Conversation...
        (_not_a_node, "Invalid use of @refetchable on fragment 'ConversationHeader_conversation'"),
        # ...and without last/before, no loadPrevious.
        (_messages_forward_only, "Unknown argument 'last' on field 'Conversation.messages'"),
    ],
    ids=["conversation-not-a-node", "messages-forward-only"],
)
async def test_the_compiler_checks_what_the_documents_need(
    tmp_path: Path, change: Callable[[str], str], error: str
) -> None:
    """The check can fail: the schema without what the documents rely on does not compile."""
    code, output, _ = await relay_compile(tmp_path, change(SCHEMA.read_text()))
    assert code != 0
    assert error in output, output


@contextlib.asynccontextmanager
async def subscribed(
    api: Api, app: web.Application, account: Account, query: str, variables: dict[str, Any], channel: str
) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
    """``query`` running for ``account``; yields once the gateway has registered it (the
    queue receives its results)."""
    live = app[SERVICES].live
    assert live is not None
    baseline = live.followers(channel)
    events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def run() -> None:
        async with api.websocket(account.token) as session:
            async for result in session.subscribe(GraphQLRequest(query, variable_values=variables)):
                await events.put(result)

    task = asyncio.create_task(run())
    try:
        async with asyncio.timeout(EVENT_TIMEOUT):
            while live.followers(channel) <= baseline:
                if task.done():
                    task.result()
                await asyncio.sleep(0.02)
        yield events
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_the_gateway_answers_what_relay_sends(api: Api, app: web.Application, tmp_path: Path) -> None:
    code, output, texts = await relay_compile(tmp_path, SCHEMA.read_text())
    assert code == 0, output
    alice = await api.sign_up("relaya")
    bob = await api.sign_up("relayb")
    ran: set[str] = set()

    async def run(operation: str, account: Account, variables: dict[str, Any]) -> dict[str, Any]:
        ran.add(operation)
        return await api.ok(texts[operation], variables, token=account.token)

    send = {"to": alice.login, "clientMessageId": None, **CONNECTIONS}
    for n in range(3):
        await run("ChatScreenSendMutation", bob, {**send, "content": f"old {n}"})

    # The conversation screen: its first page (the fragment's first: 50) and its header.
    screen = await run("ChatScreenConversationQuery", alice, {"with": bob.login})
    conversation = screen["me"]["conversation"]
    edges = conversation["messages"]["edges"]
    assert [e["node"]["content"] for e in edges] == ["old 2", "old 1", "old 0"]
    assert conversation["messages"]["pageInfo"] == {
        "startCursor": edges[0]["cursor"],
        "endCursor": edges[-1]["cursor"],
        "hasNextPage": False,
        "hasPreviousPage": False,
    }
    header = await run("ConversationHeaderRefetchQuery", alice, {"id": conversation["id"]})
    assert header["node"]["id"] == conversation["id"]
    assert header["node"]["unreadCount"] == 3
    assert header["node"]["with"]["login"] == bob.login

    # Relay's variables for the pagination query: the fragment's, then the page's, the other
    # direction's set to null (relay-runtime's getPaginationVariables).
    base = {"id": conversation["id"], "first": 50, "after": None, "last": None, "before": None}

    async def load(direction: str, count: int, cursor: str) -> dict[str, Any]:
        if direction == "next":
            page = {"first": count, "after": cursor, "last": None, "before": None}
        else:
            page = {"last": count, "before": cursor, "first": None, "after": None}
        data = await run("ConversationMessagesPaginationQuery", alice, {**base, **page})
        return data["node"]["messages"]

    older = await load("next", 1, edges[1]["cursor"])
    assert [e["node"]["content"] for e in older["edges"]] == ["old 0"]
    assert older["pageInfo"]["hasNextPage"] is False

    # Two messages arrive (bob's messageReceived sees the first, as Relay subscribes to it):
    # loadPrevious from the newest cursor alice holds fetches exactly them, newest first.
    received = {**CONNECTIONS}
    async with subscribed(
        api, app, alice, texts["ChatScreenReceivedSubscription"], received, user_messages_channel(alice.login)
    ) as events:
        ran.add("ChatScreenReceivedSubscription")
        await run("ChatScreenSendMutation", bob, {**send, "content": "new 0"})
        event = (await asyncio.wait_for(events.get(), EVENT_TIMEOUT))["messageReceived"]
    assert event["content"] == "new 0"
    assert event["conversation"] == {"id": conversation["id"], "unreadCount": 4}
    assert event["talkPartner"]["lastMessage"] == "new 0"
    await run("ChatScreenSendMutation", bob, {**send, "content": "new 1"})
    newer = await load("previous", 10, edges[0]["cursor"])
    assert [e["node"]["content"] for e in newer["edges"]] == ["new 1", "new 0"]
    assert newer["pageInfo"]["hasPreviousPage"] is False
    assert newer["pageInfo"]["startCursor"] == newer["edges"][0]["cursor"]
    nearest = await load("previous", 1, edges[0]["cursor"])
    assert [e["node"]["content"] for e in nearest["edges"]] == ["new 0"]
    assert nearest["pageInfo"]["hasPreviousPage"] is True

    read = await run("ChatScreenMarkReadMutation", alice, {"with": bob.login})
    assert read["markConversationRead"]["unreadCount"] == 0
    assert read["markConversationRead"]["conversation"]["unreadCount"] == 0

    # The main view, and its pagination query through node(id:) of Me.
    main = await run("ChatScreenMainViewQuery", alice, {})
    me = main["me"]
    assert [e["node"]["partner"]["login"] for e in me["talkPartners"]["edges"]] == [bob.login]
    paged = await run(
        "TalkPartnerListPaginationQuery",
        alice,
        {"id": me["id"], "first": 1, "after": None, "last": None, "before": None},
    )
    assert paged["node"]["talkPartners"]["edges"] == me["talkPartners"]["edges"]

    # A room: the screen, a post, what bob's subscription hears, and loadPrevious.
    room = f"relay-{alice.login[-8:]}"
    await api.ok("mutation($n: String!) { createRoom(name: $n) { id } }", {"n": room}, token=alice.token)
    await api.ok("mutation($n: String!) { joinRoom(name: $n) { id } }", {"n": room}, token=bob.token)
    shown = (await run("ChatScreenRoomQuery", bob, {"name": room}))["room"]
    newest = shown["messages"]["edges"][0]["cursor"]
    watching = {"room": room, **CONNECTIONS}
    async with subscribed(
        api, app, bob, texts["ChatScreenRoomMessagesSubscription"], watching, room_channel(room)
    ) as events:
        ran.add("ChatScreenRoomMessagesSubscription")
        posted = await run(
            "ChatScreenPostMutation", alice, {"room": room, "content": "hi room", **CONNECTIONS}
        )
        heard = (await asyncio.wait_for(events.get(), EVENT_TIMEOUT))["roomMessages"]
    assert posted["postRoomMessage"]["room"] == {"id": shown["id"], "participantCount": 2}
    assert heard["id"] == posted["postRoomMessage"]["id"]
    room_page = {"id": shown["id"], "first": None, "after": None, "last": 10, "before": newest}
    since = (await run("RoomMessagesPaginationQuery", bob, room_page))["node"]["messages"]
    assert [e["node"]["content"] for e in since["edges"]] == ["hi room"]
    assert since["pageInfo"]["hasPreviousPage"] is False

    assert ran == OPERATIONS
