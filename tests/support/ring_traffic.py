"""What the ring tests do as a client: each operation checked (queries, plain writes and
lightweight transactions), and the phases they time."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.client import Account, Api
from tests.support.messenger import CONVERSATION, SEND
from tests.support.rooms import CREATE, HISTORY, JOIN, POST, USER_ROOMS, room_name


@contextmanager
def phase(name: str, timings: dict[str, float]) -> Iterator[None]:
    started = time.monotonic()
    yield
    timings[name] = time.monotonic() - started
    print(f"ring test: {name}: {timings[name]:.1f}s", file=sys.stderr, flush=True)


class Traffic:
    """The operations a client does, each checked: queries, plain writes and LWTs."""

    def __init__(self, api: Api) -> None:
        self.api = api

    async def sign_up(self, prefix: str) -> Account:  # LWT: INSERT ... IF NOT EXISTS on the login
        return await self.api.sign_up(prefix)

    async def send(self, sender: Account, to: Account, content: str) -> None:  # writes + unread LWT
        data = await self.api.ok(SEND, {"to": to.login, "content": content}, token=sender.token)
        assert data["sendMessage"]["content"] == content

    async def create_room(self, owner: Account) -> str:  # LWT
        name = room_name("ring")
        data = await self.api.ok(CREATE, {"n": name, "b": None}, token=owner.token)
        assert data["createRoom"]["name"] == name
        return name

    async def join(self, member: Account, name: str) -> None:  # LWT on the membership
        data = await self.api.ok(JOIN, {"n": name}, token=member.token)
        assert member.login in [node["login"] for node in data["joinRoom"]["participants"]["nodes"]]

    async def post(self, author: Account, name: str, content: str) -> None:
        await self.api.ok(POST, {"r": name, "c": content}, token=author.token)

    async def conversation(self, reader: Account, other: Account) -> list[str]:
        """Every message of the conversation, read two to a page."""
        contents: list[str] = []
        after: str | None = None
        while True:
            variables = {"with": other.login, "first": 2, "after": after}
            page = (await self.api.ok(CONVERSATION, variables, token=reader.token))["me"]["conversation"]
            contents += [edge["node"]["content"] for edge in page["messages"]["edges"]]
            if not page["messages"]["pageInfo"]["hasNextPage"]:
                return contents
            after = page["messages"]["pageInfo"]["endCursor"]

    async def history(self, reader: Account, name: str) -> list[str]:
        data = await self.api.ok(HISTORY, {"n": name, "first": 50}, token=reader.token)
        return [edge["node"]["content"] for edge in data["room"]["messages"]["edges"]]

    async def rooms_of(self, account: Account) -> list[str]:
        data = await self.api.ok(USER_ROOMS, {"l": account.login, "first": 1})
        names = [node["name"] for node in data["user"]["rooms"]["nodes"]]
        page = data["user"]["rooms"]["pageInfo"]
        while page["hasNextPage"]:
            more = await self.api.ok(USER_ROOMS, {"l": account.login, "first": 1, "after": page["endCursor"]})
            names += [node["name"] for node in more["user"]["rooms"]["nodes"]]
            page = more["user"]["rooms"]["pageInfo"]
        return names

    async def workout(self, tag: str, alice: Account, bob: Account, room: str) -> None:
        """Everything at once: a new user, messages both ways, a new room joined, pages read."""
        carol = await self.sign_up(f"r{tag}")
        await self.send(alice, bob, f"{tag}: hello bob")
        await self.send(bob, alice, f"{tag}: hello alice")
        await self.send(carol, alice, f"{tag}: hello from carol")
        await self.join(carol, room)
        new_room = await self.create_room(carol)
        await self.join(alice, new_room)
        await self.post(carol, room, f"{tag}: carol was here")
        assert (await self.conversation(alice, carol)) == [f"{tag}: hello from carol"]
        both = await self.conversation(bob, alice)
        assert both[:2] == [f"{tag}: hello alice", f"{tag}: hello bob"], both
        assert f"{tag}: carol was here" in await self.history(bob, room)
        assert set(await self.rooms_of(carol)) == {room, new_room}
