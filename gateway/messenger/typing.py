"""Typing indicators that stop by themselves.

``setTyping(with:, typing: true)`` is published once (``events.typing_channel``) and
never stored. A client sends it again every few seconds while its user types; when
it stops sending (the user stopped, the phone lost its network, the tab closed), the
indicator must still go out. So each process that has subscribers of a user's typing
channel remembers, per (recipient, sender), until when the last ``typing: true`` holds,
and when that passes with no renewal and no ``typing: false``, hands its own
subscribers a ``typing: false`` (:meth:`LiveHub.inject`: every process with
subscribers does the same for its own, so nothing crosses the broker for it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from gateway.messenger.events import typing_channel, typing_event

#: Seconds a ``typing: true`` holds without renewal (``GATEWAY_TYPING_SECONDS``);
#: clients renew it every few seconds.
TYPING_SECONDS = 6.0

LocalDelivery = Callable[[str, Any], Awaitable[None]]


class TypingExpiry:
    def __init__(self, deliver_here: LocalDelivery, *, seconds: float = TYPING_SECONDS) -> None:
        self.deliver_here = deliver_here
        self.seconds = seconds
        #: (recipient, sender) -> the loop time the indicator lapses at.
        self._until: dict[tuple[str, str], float] = {}
        self._changed = asyncio.Event()

    def __len__(self) -> int:
        return len(self._until)

    def heard(self, event: dict[str, Any]) -> None:
        """A typing event reached this process's subscribers."""
        key = (str(event.get("to")), str(event.get("from")))
        if event.get("typing"):
            self._until[key] = asyncio.get_running_loop().time() + self.seconds
            self._changed.set()
        else:
            self._until.pop(key, None)

    async def run(self, ready: asyncio.Event) -> None:
        """For the life of the process: send each lapsed indicator's ``typing: false``."""
        loop = asyncio.get_running_loop()
        while True:
            self._changed.clear()
            now = loop.time()
            lapsed = [key for key, until in self._until.items() if until <= now]
            for recipient, sender in lapsed:
                del self._until[(recipient, sender)]
                event = typing_event(sender, recipient, False, datetime.now(UTC))
                await self.deliver_here(typing_channel(recipient), event)
            wait = min(self._until.values(), default=now + 3600.0) - loop.time()
            if wait > 0:
                try:
                    async with asyncio.timeout(wait):
                        await self._changed.wait()
                except TimeoutError:
                    pass
