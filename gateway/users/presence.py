"""Presence: who is online, when they were last seen, and who may know it.

A user is online while any of their authenticated WebSockets is open on any
process (the sockets report to :meth:`Presence.connected` and
:meth:`Presence.disconnected`); the process-wide board of the broker
(``gateway/broker/presence.py``) tells when that makes them come online or go
offline everywhere. Each change is published once, on the user's own channel
(``presence:<login>``): a user with thousands of talk partners going online is
one broker message, heard by the processes whose subscribers asked for that
user. ``lastSeenAt`` reaches Cassandra once per disconnect of a user's last
socket, never per heartbeat.

A user who appears offline (``setPresenceVisible(visible: false)``) is never
reported online: the choice is stored, and announced on a process-wide control
channel so every process holding their sockets withdraws them from the board.

The users of a process that dies go offline by themselves (their claims on the
board lapse); nobody publishes that, so each process looks again, every
``RECHECK`` seconds, at the users its own ``presenceChanged`` subscribers watch,
and tells them of what changed.

Who may see a user's presence: the user, a talk partner, or someone sharing a
room with them. The last two are other domains' knowledge: the composition root
hands them in (``talk_partners_of``, ``room_mates_of``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gateway.broker.presence import PresenceBoard
from gateway.broker.pubsub import BrokerUnavailable, PubSub
from gateway.tasks import cancel_and_wait
from gateway.users.presence_store import PresenceStore, StoredPresence

log = logging.getLogger(__name__)

#: The process-wide channel of invisibility choices.
CONTROL_CHANNEL = "presence:control"
#: Seconds between looks at the watched users whose process may have died.
RECHECK = 5.0
#: Seconds a stopping process gives its last presence changes to reach the broker.
SETTLE_AT_EXIT = 2.0

#: Of ``logins``, those the ``viewer`` is related to (a talk partner, a room mate).
Relation = Callable[[str, list[str]], Awaitable[set[str]]]
#: Hands an event to this process's subscribers of a channel, and to no other process's.
LocalDelivery = Callable[[str, Any], Awaitable[None]]


def presence_channel(login: str) -> str:
    return f"presence:{login}"


@dataclass(frozen=True)
class PresenceState:
    online: bool
    last_seen_at: datetime | None

    def event(self, login: str) -> dict[str, Any]:
        """The broker message announcing this state (JSON-ready)."""
        seen = self.last_seen_at.isoformat() if self.last_seen_at else None
        return {"login": login, "online": self.online, "lastSeenAt": seen}

    @classmethod
    def of_event(cls, event: dict[str, Any]) -> PresenceState:
        seen = event.get("lastSeenAt")
        return cls(bool(event.get("online")), datetime.fromisoformat(seen) if seen else None)


class Presence:
    def __init__(
        self,
        board: PresenceBoard,
        store: PresenceStore,
        pubsub: PubSub,
        *,
        talk_partners_of: Relation,
        room_mates_of: Relation,
        deliver_here: LocalDelivery | None = None,
        recheck: float = RECHECK,
    ) -> None:
        self.recheck = recheck
        self.board = board
        self.store = store
        self.pubsub = pubsub
        self.talk_partners_of = talk_partners_of
        self.room_mates_of = room_mates_of
        self.deliver_here = deliver_here
        #: Sockets of each user open on this process, and the users of them on the board.
        self._sockets: Counter[str] = Counter()
        self._on_board: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed_at: dict[str, datetime] = {}
        self._settling: set[asyncio.Task[None]] = set()
        #: Users whose last settling failed; each recheck tries again.
        self._unsettled: set[str] = set()
        #: Users this process's presenceChanged subscribers watch, and what they last heard.
        self._watched: Counter[str] = Counter()
        self._heard: dict[str, bool] = {}
        #: When the board last vouched for each watched user online.
        self._vouched: dict[str, datetime] = {}
        self._tasks: list[asyncio.Task[None]] = []

    # -- sockets ---------------------------------------------------------------

    def connected(self, login: str) -> None:
        """An authenticated socket of ``login`` opened on this process."""
        self._sockets[login] += 1
        if self._sockets[login] == 1:
            self._settle_soon(login)

    def disconnected(self, login: str) -> None:
        """An authenticated socket of ``login`` closed on this process."""
        self._sockets[login] -= 1
        if self._sockets[login] <= 0:
            del self._sockets[login]
            self._closed_at[login] = datetime.now(UTC)
            self._settle_soon(login)

    async def settled(self) -> None:
        """Wait until every settling begun so far is done."""
        while self._settling:
            await asyncio.wait(set(self._settling))

    def _settle_soon(self, login: str) -> None:
        task = asyncio.get_running_loop().create_task(self._settle(login))
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def _settle(self, login: str) -> None:
        """Bring the board in line with this process's sockets of ``login``: on it while
        one is open, off it (with when the last closed) once none is. A step that fails
        (Cassandra or the broker away) is tried again by the next recheck."""
        async with self._lock(login):
            try:
                if login in self._sockets:
                    await self._join(login)
                else:
                    await self._leave(login, seen=self._closed_at.get(login) or datetime.now(UTC))
                    self._closed_at.pop(login, None)
            except Exception as exc:
                self._unsettled.add(login)
                log.warning("presence of %s not settled, will retry: %s", login, exc)
            else:
                self._unsettled.discard(login)

    async def _join(self, login: str) -> None:
        if login in self._on_board or login not in self._sockets:
            return
        stored = (await self.store.get_many([login])).get(login, StoredPresence())
        if stored.invisible:
            return
        self._on_board.add(login)
        if await self.board.join(login):
            await self._announce(login, PresenceState(True, None))

    async def _leave(self, login: str, *, seen: datetime | None) -> None:
        """Off the board; ``seen``: when (None: keep the stored time, for a user who hides)."""
        if login not in self._on_board:
            return
        self._on_board.discard(login)
        if not await self.board.leave(login):
            return
        if seen is not None:
            await self.store.seen(login, seen)
        else:
            seen = (await self.store.get_many([login])).get(login, StoredPresence()).last_seen_at
        await self._announce(login, PresenceState(False, seen))

    async def _announce(self, login: str, state: PresenceState) -> None:
        await self.pubsub.publish(presence_channel(login), state.event(login))

    def _lock(self, login: str) -> asyncio.Lock:
        lock = self._locks.get(login)
        if lock is None:
            lock = self._locks[login] = asyncio.Lock()
        return lock

    # -- appearing offline -----------------------------------------------------

    async def set_visible(self, login: str, visible: bool) -> None:
        """Store the choice and tell every process holding the user's sockets."""
        await self.store.set_invisible(login, not visible)
        await self._apply_visibility(login, visible)
        await self.pubsub.publish(CONTROL_CHANNEL, {"login": login, "visible": visible})

    async def _apply_visibility(self, login: str, visible: bool) -> None:
        async with self._lock(login):
            if visible:
                await self._join(login)
            else:
                await self._leave(login, seen=None)

    # -- reading -----------------------------------------------------------------

    async def states(self, logins: Iterable[str]) -> dict[str, PresenceState]:
        """Each user's presence as anyone who may see it sees it: one board read and one
        read of the stored presence for all of them."""
        wanted = list(dict.fromkeys(logins))
        if not wanted:
            return {}
        online = await self.board.online(wanted)
        stored = await self.store.get_many(wanted)
        states: dict[str, PresenceState] = {}
        for login in wanted:
            kept = stored.get(login, StoredPresence())
            states[login] = PresenceState(login in online and not kept.invisible, None)
            if not states[login].online:
                states[login] = PresenceState(False, kept.last_seen_at)
        return states

    async def visible_to(self, viewer: str | None, logins: Iterable[str]) -> set[str]:
        """Of ``logins``, whose presence ``viewer`` may see: themselves, their talk partners,
        those sharing a room with them."""
        wanted = set(logins)
        if viewer is None or not wanted:
            return set()
        seen = {viewer} & wanted
        rest = sorted(wanted - seen)
        if rest:
            seen |= await self.talk_partners_of(viewer, rest)
            rest = sorted(wanted - seen)
        if rest:
            seen |= await self.room_mates_of(viewer, rest)
        return seen

    # -- watching users whose process may die -------------------------------------

    def watch(self, logins: Iterable[str], states: dict[str, PresenceState]) -> Callable[[], None]:
        """A subscriber of this process watches ``logins`` (last told ``states``) until the
        function returned is called (once)."""
        chosen = list(logins)
        for login in chosen:
            self._watched[login] += 1
            self._heard.setdefault(login, states[login].online if login in states else False)

        def unwatch() -> None:
            for login in chosen:
                self._watched[login] -= 1
                if self._watched[login] <= 0:
                    del self._watched[login]
                    self._heard.pop(login, None)
                    self._vouched.pop(login, None)
            chosen.clear()

        return unwatch

    def heard(self, login: str, online: bool) -> None:
        """What this process's subscribers were last told of ``login``."""
        if login in self._watched:
            self._heard[login] = online

    async def _recheck(self) -> None:
        while True:
            await asyncio.sleep(self.recheck)
            for login in list(self._unsettled):
                await self._settle(login)
            self._prune_locks()
            await self._recheck_watched()

    def _prune_locks(self) -> None:
        for login in [login for login, lock in self._locks.items() if not lock.locked()]:
            if login not in self._sockets and login not in self._unsettled:
                del self._locks[login]

    async def _recheck_watched(self) -> None:
        """Tell this process's subscribers of watched users who went offline with nobody
        announcing it (their process died): last seen when their claim was last renewed."""
        watched = list(self._watched)
        if not watched or self.deliver_here is None:
            return
        try:
            online = await self.board.online(watched)
            lapsed = [login for login in watched if self._heard.get(login) is True and login not in online]
            for login in watched:
                vouched = online.get(login)
                if login in online:
                    self._vouched[login] = vouched or datetime.now(UTC)
            if not lapsed:
                return
            states = await self.states(lapsed)
        except Exception as exc:
            log.warning("could not recheck the presence of %d users: %s", len(watched), exc)
            return
        for login, state in states.items():
            if state.online or self._heard.get(login) is not True:
                continue
            seen = self._vouched.pop(login, None)
            if seen is not None and (state.last_seen_at is None or state.last_seen_at < seen):
                with contextlib.suppress(Exception):
                    await self.store.seen(login, seen)
                state = PresenceState(False, seen)
            self._heard[login] = False
            await self.deliver_here(presence_channel(login), state.event(login))

    async def _follow_control(self) -> None:
        while True:
            try:
                async with self.pubsub.subscribe(CONTROL_CHANNEL) as messages:
                    async for message in messages:
                        if isinstance(message, dict) and message.get("login") in self._sockets:
                            await self._apply_visibility(str(message["login"]), bool(message.get("visible")))
            except BrokerUnavailable:
                pass
            await asyncio.sleep(1.0)

    async def run(self, ready: asyncio.Event) -> None:
        """For the life of the process: the board's own upkeep, the rechecks of watched
        users and the invisibility choices other processes announce."""
        await self.board.start()
        tasks = [asyncio.create_task(self._recheck()), asyncio.create_task(self._follow_control())]
        try:
            await asyncio.gather(*tasks)
        finally:
            if self._settling:  # sockets closed as the process stops: their users' last seen
                await asyncio.wait(list(self._settling), timeout=SETTLE_AT_EXIT)
            await cancel_and_wait(*tasks, *self._settling, what="presence's background tasks")
            await self.board.aclose()
