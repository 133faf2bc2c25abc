"""The sessions of a process's signed-in WebSockets, watched by one listener for them all.

A socket bound to a session (``gateway/http/websocket.py``) registers it here and is
told when it ends: when ``signOut`` anywhere announces its key on
:data:`~gateway.broker.sessions.REVOCATIONS`, or when it expires (a timer per socket).
The process listens on that one channel for as long as it runs, so a socket costs a
registration and a timer, not a task and a broker subscription of its own.

A revocation may be missed while the listener is away from the channel: the broker lost
or not reached yet (then every watched session is looked up every
:data:`BROKER_POLL_SECONDS`, one CQL statement per session, until the channel is back), or
the channel dropping a listener that fell behind or reconnecting. Each time the listener is
on the channel again, every session is looked up once.

The process's session cache (``gateway/users/session_cache.py``) is told the same: every
revocation heard, and whether the listener is on the channel (the cache is trusted only
while it is).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from gateway.broker.pubsub import BrokerUnavailable, PubSub
from gateway.broker.sessions import REVOCATIONS, RevocationListener, SessionLookup, session_key
from gateway.db.session import CassandraUnavailable

log = logging.getLogger(__name__)

#: Pause before listening again on the channel after it dropped the listener or could not
#: be listened to.
RESUBSCRIBE_SECONDS = 1.0
#: While the broker is unreachable revocations cannot arrive: every watched session is
#: looked up this often instead.
BROKER_POLL_SECONDS = 5.0
#: Sessions looked up at once when they are checked again.
LOOKUPS_AT_ONCE = 50


class Watched:
    """One socket's registration: its session, and what to call when the session ends."""

    __slots__ = ("ended", "key", "timer", "token")

    def __init__(self, token: str, ended: Callable[[], None]) -> None:
        self.token = token
        self.key = session_key(token)
        self.ended = ended
        self.timer: asyncio.TimerHandle | None = None


class SessionWatch:
    """The process's registry of watched sessions and their listener (a worker of the
    composition root: :meth:`run` listens while the process runs)."""

    def __init__(
        self, pubsub: PubSub, session_of: SessionLookup, listener: RevocationListener | None = None
    ) -> None:
        """``session_of`` must read the session from Cassandra, past any cache: it is how a
        revocation missed while nobody listened is found. ``listener`` is told every
        revocation heard and whether the channel is listened to."""
        self.pubsub = pubsub
        self.session_of = session_of
        self.listener = listener
        self._by_key: dict[str, set[Watched]] = {}
        #: Set while the listener is on the channel.
        self.listening = asyncio.Event()

    def watch(self, token: str, expires_at: datetime, ended: Callable[[], None]) -> Watched:
        """Call ``ended`` once the session of ``token`` is revoked or expires (it is never
        called after :meth:`unwatch`)."""
        watched = Watched(token, ended)
        self._by_key.setdefault(watched.key, set()).add(watched)
        remaining = (expires_at - datetime.now(UTC)).total_seconds()
        loop = asyncio.get_running_loop()
        watched.timer = loop.call_at(loop.time() + max(0.0, remaining), self._end, watched)
        return watched

    def unwatch(self, watched: Watched) -> None:
        if watched.timer is not None:
            watched.timer.cancel()
            watched.timer = None
        found = self._by_key.get(watched.key)
        if found is not None:
            found.discard(watched)
            if not found:
                del self._by_key[watched.key]

    def watching(self) -> int:
        """How many sockets' sessions are watched."""
        return sum(len(found) for found in self._by_key.values())

    def _end(self, watched: Watched) -> None:
        self.unwatch(watched)
        watched.ended()

    def _revoked(self, key: object) -> None:
        if self.listener is not None and isinstance(key, str):
            self.listener.revoked(key)
        for watched in list(self._by_key.get(key, ()) if isinstance(key, str) else ()):
            self._end(watched)

    async def run(self, ready: asyncio.Event) -> None:
        """Listen for revocations until cancelled; while the channel cannot be listened to,
        try again every :data:`RESUBSCRIBE_SECONDS` and look every watched session up every
        :data:`BROKER_POLL_SECONDS`."""
        loop = asyncio.get_running_loop()
        looked_up = loop.time()
        while True:
            try:
                async with self.pubsub.subscribe(REVOCATIONS) as revocations:
                    self.listening.set()
                    self._tell(True)
                    if ready.is_set():
                        await self.check_all()  # what was revoked while nobody listened
                    async for key in revocations:
                        self._revoked(key)
            except BrokerUnavailable:
                pass
            finally:
                self.listening.clear()
                self._tell(False)
            await asyncio.sleep(RESUBSCRIBE_SECONDS)
            if ready.is_set() and loop.time() - looked_up >= BROKER_POLL_SECONDS:
                looked_up = loop.time()
                await self.check_all()

    def _tell(self, on: bool) -> None:
        if self.listener is not None:
            self.listener.listening(on)

    async def check_all(self) -> None:
        """Look every watched session up; end the sockets of those that are gone."""
        tokens = sorted({w.token for found in self._by_key.values() for w in found})
        for at in range(0, len(tokens), LOOKUPS_AT_ONCE):
            chunk = tokens[at : at + LOOKUPS_AT_ONCE]
            found = await asyncio.gather(*(self._lives(token) for token in chunk))
            for token, lives in zip(chunk, found, strict=True):
                if not lives:
                    self._revoked(session_key(token))

    async def _lives(self, token: str) -> bool:
        try:
            return await self.session_of(token) is not None
        except CassandraUnavailable:
            return True
        except Exception:
            log.exception("could not look a watched session up")
            return True
