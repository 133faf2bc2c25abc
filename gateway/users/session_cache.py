"""The sessions a process has looked up, kept in memory so a request reads no ``sessions`` row.

Every authenticated request needs its viewer, and reading ``sessions`` for it was one CQL
statement of every such request. :class:`SessionCache` keeps each live session it read (or
created) under its key, the token's SHA-256 (what ``sessions`` stores, and what revocations
announce), and answers the next lookup of that token from memory:

- **bounded in size**: at most ``GATEWAY_SESSION_CACHE_SIZE`` sessions, the least recently
  used dropped first (``0`` turns the cache off);
- **expiry to the second**: a kept session whose ``expires_at`` has passed is refused at
  once, as the read would refuse it;
- **bounded in age**: a session is read again ``GATEWAY_SESSION_CACHE_SECONDS`` after it
  was kept, which heals a revocation the broker lost while it was up;
- **dropped by revocation**: ``signOut`` on this process drops it before and after its
  ``DELETE``; on any other process, the announcement on ``sessions:revoked`` reaches this
  process's one listener (``gateway/http/session_watch.py``, which also serves the
  WebSockets) and drops it there. ``signOut`` answers once its own process has heard
  its announcement, so the other processes have been sent it before the client's next
  request.

HTTP requests (and uploads) look their sessions up here. A WebSocket's operations read
theirs from Cassandra, past the cache (``Services.session_of``): that per-operation read
is the socket's own check for a revocation it was not told of.

While that listener is not on the channel (the broker lost or not reached yet, the
channel dropping a listener that fell behind), a revocation may be missed, so the cache
is **not trusted**: it is emptied when the listener leaves the channel and again when it
is back, and meanwhile every lookup reads Cassandra and keeps nothing. A lookup that
started before a revocation or a change of trust keeps nothing either (a generation
counter tells), so a read racing a ``signOut`` never brings its session back.

With one process and no broker, the in-process channel always listens: the cache is
trusted once the listener has started, and ``signOut`` is heard by the same process.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from gateway.broker.sessions import session_key
from gateway.settings import Settings
from gateway.users.records import SessionRecord
from gateway.users.store import SessionStore


class _Entry(NamedTuple):
    session: SessionRecord
    #: Wall-clock second (``time.time()``) at which the session expires.
    expires: float
    #: Monotonic time after which the session is read again.
    stale: float


class SessionCache:
    """The process's sessions, in front of :class:`SessionStore` (same lookups, same answers)."""

    def __init__(self, store: SessionStore, settings: Settings) -> None:
        self.store = store
        self.size = settings.session_cache_size
        self.max_age = settings.session_cache_seconds
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        #: Whether the revocations listener is on the channel (nothing is used or kept until it is).
        self.trusted = False
        #: Changes with every revocation and change of trust: a lookup keeps its session only
        #: when nothing changed while it read.
        self._generation = 0
        self._heard: dict[str, list[asyncio.Future[None]]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    # -- lookups -----------------------------------------------------------------------

    async def active(self, token: str) -> SessionRecord | None:
        """The session of ``token`` while it lives; None when unknown, revoked or expired."""
        key = session_key(token)
        if self.trusted:
            entry = self._entries.get(key)
            if entry is not None:
                if time.time() >= entry.expires:
                    del self._entries[key]
                    return None
                if time.monotonic() < entry.stale:
                    self._entries.move_to_end(key)
                    return entry.session
                del self._entries[key]
        generation = self._generation
        session = await self.store.active(token)
        if session is not None and generation == self._generation:
            self._keep(key, session)
        return session

    async def login_of(self, token: str) -> str | None:
        session = await self.active(token)
        return session.login if session else None

    async def create(self, login: str) -> SessionRecord:
        """A new session, kept: the next request with its token reads nothing."""
        session = await self.store.create(login)
        self._keep(session_key(session.token), session)
        return session

    async def revoke(self, token: str) -> None:
        """Delete the session; this process refuses its token from now on."""
        key = session_key(token)
        self._drop(key)
        await self.store.revoke(token)
        self._drop(key)  # a lookup that read the row before the DELETE keeps nothing

    def _keep(self, key: str, session: SessionRecord) -> None:
        if not self.trusted or self.size <= 0:
            return
        now = time.monotonic()
        self._entries[key] = _Entry(session, session.expires_at.timestamp(), now + self.max_age)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def _drop(self, key: str) -> None:
        self._generation += 1
        self._entries.pop(key, None)

    # -- what the revocations listener tells (broker.sessions.RevocationListener) -------

    def revoked(self, key: str) -> None:
        self._drop(key)
        for heard in self._heard.pop(key, ()):
            if not heard.done():
                heard.set_result(None)

    def listening(self, on: bool) -> None:
        self._generation += 1
        self._entries.clear()
        self.trusted = on

    async def announce(self, key: str, publish: Callable[[], Awaitable[None]], within: float) -> None:
        """Run ``publish`` (the announcement of ``key``'s revocation), then wait, at most
        ``within`` seconds, until the listener hears it (nothing to wait for while it is not
        on the channel).

        The broker hands a message to every listening process at once, so once this process
        has heard it, every other process's copy has been sent too: a ``signOut`` that waits
        for it answers after every process's cache has been told."""
        if not self.trusted:
            await publish()
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._heard.setdefault(key, [])
        waiters.append(waiter)
        try:
            await publish()
            async with asyncio.timeout(within):
                await waiter
        except TimeoutError:
            pass
        finally:
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters and self._heard.get(key) is waiters:
                del self._heard[key]
