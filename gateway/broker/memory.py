"""The broker of one gateway process: fan-out to this process's subscribers only, and a
presence board whose sockets are all of this process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime
from typing import Any

from gateway.broker.pubsub import FELL_BEHIND, BrokerState, BrokerUnavailable, publishing
from gateway.tracing import Tracer

log = logging.getLogger(__name__)

_CLOSED = object()
#: Queue marker: the subscriber fell too far behind (its backlog was dropped).
_BEHIND = object()


class InProcessPubSub:
    """Fan-out to every subscriber of a channel in this process.

    Each subscriber has a bounded queue. A subscriber that falls more than
    ``queue_size`` messages behind is ended rather than allowed to grow memory
    without bound: its backlog is dropped and it ends with ``BrokerUnavailable``
    (:data:`~gateway.errors.FELL_BEHIND`), so its clients resume from their last event.
    """

    def __init__(self, queue_size: int = 1000) -> None:
        self._queue_size = queue_size
        self._subscribers: dict[str, set[asyncio.Queue[Any]]] = defaultdict(set)
        #: Told, for each event a subscriber takes, the seconds since it was published.
        self.lag_listener: Callable[[float], None] | None = None
        self.tracer: Tracer | None = None

    @property
    def state(self) -> BrokerState:
        return "in-process"

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        for channel in list(self._subscribers):
            self.close(channel)

    async def publish(self, channel: str, message: Any) -> None:
        if self.tracer is None:
            self._hand_out(channel, message)
            return
        with publishing(self.tracer, "gateway.in_process", channel) as span:
            span.set_attribute("gateway.subscribers", self.subscriber_count(channel))
            self._hand_out(channel, message)

    def _hand_out(self, channel: str, message: Any) -> None:
        item = (message, time.monotonic())
        for queue in list(self._subscribers.get(channel, ())):
            try:
                queue.put_nowait(item)
            except asyncio.QueueFull:
                log.warning("subscriber of %s fell behind; ending its subscription", channel)
                self._end(channel, queue, _BEHIND)

    def close(self, channel: str) -> None:
        """End every subscription of ``channel`` (after what was already published)."""
        for queue in list(self._subscribers.get(channel, ())):
            self._end(channel, queue)

    def subscriber_count(self, channel: str) -> int:
        return len(self._subscribers.get(channel, ()))

    def _end(self, channel: str, queue: asyncio.Queue[Any], marker: object = _CLOSED) -> None:
        self._discard(channel, queue)
        with contextlib.suppress(asyncio.QueueFull):
            queue.put_nowait(marker)
            return
        # Full: drop the backlog so the end marker fits.
        while not queue.empty():
            queue.get_nowait()
        queue.put_nowait(marker)

    def _discard(self, channel: str, queue: asyncio.Queue[Any]) -> None:
        subscribers = self._subscribers.get(channel)
        if subscribers is not None:
            subscribers.discard(queue)
            if not subscribers:
                del self._subscribers[channel]

    @contextlib.asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[AsyncIterator[Any]]:
        """Registers at once (before the first ``await``), so nothing published after entry is missed."""
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=self._queue_size + 1)
        self._subscribers[channel].add(queue)

        async def messages() -> AsyncIterator[Any]:
            while True:
                item = await queue.get()
                if item is _CLOSED:
                    return
                if item is _BEHIND:
                    raise BrokerUnavailable(FELL_BEHIND)
                message, at = item
                if self.lag_listener is not None:
                    self.lag_listener(time.monotonic() - at)
                yield message

        try:
            yield messages()
        finally:
            self._discard(channel, queue)


class MemoryPresenceBoard:
    """The board of a single process: its own sockets are everyone's."""

    def __init__(self) -> None:
        self._joined: Counter[str] = Counter()
        #: Told how many users have a socket open here, at every change.
        self.claims_listener: Callable[[int], None] | None = None

    def _claimed(self) -> None:
        if self.claims_listener is not None:
            self.claims_listener(len(self._joined))

    async def join(self, login: str) -> bool:
        self._joined[login] += 1
        self._claimed()
        return self._joined[login] == 1

    async def leave(self, login: str) -> bool:
        self._joined[login] -= 1
        if self._joined[login] > 0:
            return False
        del self._joined[login]
        self._claimed()
        return True

    async def online(self, logins: Iterable[str]) -> dict[str, datetime | None]:
        return {login: None for login in logins if login in self._joined}

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        self._joined.clear()
        self._claimed()
