"""Who has a socket open, across processes: the presence board.

A user is online while any of their authenticated WebSockets is open on any
gateway process. Each process tells the board when a user's first socket opens
on it and when their last one closes (:meth:`PresenceBoard.join`,
:meth:`PresenceBoard.leave`); the board answers whether that made the user come
online or go offline everywhere, and who of a list is online. One process keeps
it in memory (:class:`gateway.broker.memory.MemoryPresenceBoard`); several share it through Redis
(``gateway/broker/redis_presence.py``), where each process refreshes its own
entries, so the users of a process that dies go offline by themselves within a
bound, with no cleanup job.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol


class PresenceBoard(Protocol):
    async def join(self, login: str) -> bool:
        """This process has its first socket of ``login`` open; True when that brought
        the user online (they had none open anywhere)."""
        ...

    async def leave(self, login: str) -> bool:
        """This process closed its last socket of ``login``; True when that left the user
        with none open anywhere."""
        ...

    async def online(self, logins: Iterable[str]) -> dict[str, datetime | None]:
        """Of ``logins``, those online (each with when a process last vouched for them,
        or None when that is now)."""
        ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...
