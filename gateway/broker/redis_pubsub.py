"""The :class:`~gateway.broker.pubsub.PubSub` protocol over a Redis broker.

Redis pub/sub only fans out; Cassandra stays the system of record, so an event
the broker drops is never data lost (clients catch up by querying).

One process holds one subscriber connection, whatever the number of
subscriptions: a channel is SUBSCRIBEd while at least one local subscriber
listens to it, and each message is decoded once and handed to every local
subscriber's bounded queue. Publishing uses a small separate connection pool.
Channels are prefixed with a namespace (the keyspace), so deployments sharing
one Redis never hear each other.

When the subscriber connection is lost (an error, or no answer to a PING for
two intervals), every local subscription ends with :class:`BrokerUnavailable`
(``UNAVAILABLE``: the client resubscribes), new subscriptions are refused the
same way, while queries and mutations go on. The connection is retried with
jittered exponential back-off; once it is back, ``state`` is ``ok`` and
subscriptions work again.

Publishing does not wait for this process's subscriber connection: an event is
sent whenever the broker answers, and logged and dropped when it does not. The
processes reconnect at different moments (each with its own back-off), and a
process that dropped its events until its own subscriber was back would drop
them while another process, back already, had subscribers live again: they
would miss those events without their subscription ending, a gap no resume
could see. A broker that refuses the connection costs each publish a refused
connect on the loopback or LAN; one that does not answer costs a publish the
timeout, after which publishing pauses for ``PUBLISH_PAUSE`` seconds (events
dropped meanwhile), so a silent broker costs one timeout per pause, not one
per mutation.

``close(channel)`` is itself a message on the channel, so it ends the
channel's subscriptions in every process, after what was published before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from gateway.broker.codec import EventCodec, UnknownEvent
from gateway.broker.pubsub import BrokerState, BrokerUnavailable, publishing
from gateway.broker.redis_client import close_within, redis_client
from gateway.tasks import cancel_and_wait
from gateway.tracing import Tracer

log = logging.getLogger(__name__)

_CLOSE_FRAME = b'{"close":1}'
#: Seconds publishing pauses after a publish the broker did not answer in time.
PUBLISH_PAUSE = 1.0


class _Lost:
    """Queue marker: the broker was lost."""


_LOST = _Lost()
_END = object()

_Queue = asyncio.Queue[Any]


class RedisPubSub:
    def __init__(
        self,
        url: str,
        codec: EventCodec,
        *,
        namespace: str,
        queue_size: int = 1000,
        ping_interval: float = 5.0,
        max_backoff: float = 5.0,
        timeout: float = 2.0,
    ) -> None:
        self.url = url
        self._codec = codec
        self._prefix = f"{namespace}:"
        self._queue_size = queue_size
        self._ping_interval = ping_interval
        self._max_backoff = max_backoff
        self._timeout = timeout
        self._subscribers: dict[str, set[_Queue]] = defaultdict(set)
        self._subscribed: set[str] = set()
        self._confirmations: dict[tuple[str, str], asyncio.Future[None]] = {}
        self._sync_lock = asyncio.Lock()
        self._pubsub: aioredis.client.PubSub | None = None
        self._connection: aioredis.Redis | None = None
        self._state: BrokerState = "unreachable"
        #: Told every change of ``state`` (the metrics' broker gauge).
        self.state_listener: Callable[[BrokerState], None] | None = None
        self._failures = 0
        self._up = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._closed = False
        self._background: set[asyncio.Task[Any]] = set()
        # One retry: a pooled connection the broker's restart closed fails its first use
        # (the command never reached the new broker), and dropping that event would leave a
        # gap in subscriptions that are live again. Were a publish's answer lost after the
        # broker ran it (a connection cut in between), the retry would deliver that event
        # twice: rarer, and visible (every event carries its id), where a gap is not.
        self._publisher = redis_client(self.url, max_connections=16, timeout=timeout, retries=1)
        #: Loop time until which publishes are dropped unsent (after a timeout).
        self._paused_until = 0.0
        self.tracer: Tracer | None = None

    def _client(self, max_connections: int = 2) -> aioredis.Redis:
        """A client that fails fast: retrying is this class's job, so nothing retries silently."""
        return redis_client(self.url, max_connections=max_connections, timeout=self._timeout)

    @property
    def state(self) -> BrokerState:
        return self._state

    def _set_state(self, state: BrokerState) -> None:
        self._state = state
        if self.state_listener is not None:
            self.state_listener(state)

    async def start(self) -> None:
        """Connect in the background; ``connected`` waits for the connection."""
        if self._runner is None:
            self._runner = asyncio.create_task(self._run(), name="redis-pubsub")

    async def connected(self) -> None:
        await self._up.wait()

    async def aclose(self) -> None:
        self._closed = True
        await cancel_and_wait(self._runner, *self._background, what="the broker subscriber")
        self._runner = None
        self._end_all(_END)
        await close_within(self._publisher.aclose(), "the broker publisher")

    # -- publishing ------------------------------------------------------------

    async def publish(self, channel: str, message: Any) -> None:
        data = self._codec.encode(message)
        if self.tracer is None:
            await self._send(channel, data)
            return
        with publishing(self.tracer, "redis", channel) as span:
            span.set_attribute("messaging.message.body.size", len(data))
            await self._send(channel, data)

    def close(self, channel: str) -> None:
        self._spawn(self._send(channel, _CLOSE_FRAME))

    async def _send(self, channel: str, data: bytes) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() < self._paused_until:
            log.warning("broker unreachable; event on %s dropped", channel)
            return
        try:
            async with asyncio.timeout(self._timeout):
                await self._publisher.publish(self._prefix + channel, data)
        except TimeoutError:
            self._paused_until = loop.time() + PUBLISH_PAUSE
            log.warning("broker publish on %s timed out; event dropped, publishing paused", channel)
        except (RedisError, OSError) as exc:
            log.warning("broker publish on %s failed (%s); event dropped", channel, exc)

    # -- subscribing -----------------------------------------------------------

    @contextlib.asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[AsyncIterator[Any]]:
        """Registers locally before the first ``await``, and returns once Redis confirmed the
        channel: nothing published (in any process) after entry is missed."""
        if self._state != "ok":
            raise BrokerUnavailable()
        queue: _Queue = asyncio.Queue(maxsize=self._queue_size + 1)
        self._subscribers[channel].add(queue)
        try:
            await self._sync(channel)

            async def messages() -> AsyncIterator[Any]:
                while True:
                    message = await queue.get()
                    if message is _END:
                        return
                    if message is _LOST:
                        raise BrokerUnavailable()
                    yield message

            yield messages()
        finally:
            self._discard(channel, queue)
            if channel not in self._subscribers and channel in self._subscribed:
                self._spawn(self._sync(channel))

    def subscriber_count(self, channel: str) -> int:
        return len(self._subscribers.get(channel, ()))

    async def _sync(self, channel: str) -> None:
        """Make Redis's subscription to ``channel`` match whether anyone here listens to it."""
        async with self._sync_lock:
            pubsub = self._pubsub
            wanted = channel in self._subscribers
            if wanted == (channel in self._subscribed):
                return
            if pubsub is None or self._state != "ok":
                if wanted:
                    raise BrokerUnavailable()
                return
            kind = "subscribe" if wanted else "unsubscribe"
            confirmed = asyncio.get_running_loop().create_future()
            # A loss may fail it after its waiter gave up: nobody else reads that error.
            confirmed.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._confirmations[(kind, channel)] = confirmed
            try:
                await pubsub.execute_command(kind.upper(), self._prefix + channel)
                async with asyncio.timeout(self._timeout * 2):
                    await asyncio.shield(confirmed)
            except (RedisError, OSError, TimeoutError) as exc:
                if wanted:
                    raise BrokerUnavailable() from exc
                return
            finally:
                self._confirmations.pop((kind, channel), None)
            if wanted:
                self._subscribed.add(channel)
            else:
                self._subscribed.discard(channel)

    def _deliver(self, channel: str, message: Any) -> None:
        for queue in list(self._subscribers.get(channel, ())):
            try:
                queue.put_nowait(message)
            except asyncio.QueueFull:
                log.warning("subscriber of %s fell behind; ending its subscription", channel)
                self._end(channel, queue, _END)

    def _end(self, channel: str, queue: _Queue, marker: object) -> None:
        self._discard(channel, queue)
        while True:
            try:
                queue.put_nowait(marker)
                return
            except asyncio.QueueFull:
                queue.get_nowait()

    def _end_all(self, marker: object) -> None:
        for channel, queues in list(self._subscribers.items()):
            for queue in list(queues):
                self._end(channel, queue, marker)

    def _discard(self, channel: str, queue: _Queue) -> None:
        queues = self._subscribers.get(channel)
        if queues is not None:
            queues.discard(queue)
            if not queues:
                del self._subscribers[channel]

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- the connection --------------------------------------------------------

    async def _run(self) -> None:
        while not self._closed:
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self._state == "ok":
                    log.warning("broker %s lost (%s); subscriptions end, reconnecting", self.url, exc)
                elif self._failures == 0:
                    log.warning("broker %s unreachable (%s); retrying", self.url, exc)
                self._failures += 1
            finally:
                await self._lose()
            delay = min(self._max_backoff, 0.1 * 2 ** min(self._failures, 10))
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))

    async def _session(self) -> None:
        """One connection's life: connect, then read and ping until something fails."""
        self._connection = self._client()
        self._pubsub = pubsub = self._connection.pubsub()
        async with asyncio.timeout(self._timeout):
            await pubsub.connect()  # type: ignore[no-untyped-call]  # redis 8.1: unannotated
            await pubsub.ping()
            first = await pubsub.get_message(timeout=None)
        if first is None or first.get("type") != "pong":
            raise ConnectionError(f"unexpected first answer from the broker: {first!r}")
        self._set_state("ok")
        self._failures = 0
        self._up.set()
        log.info("broker %s connected", self.url)
        loop = asyncio.get_running_loop()
        last_seen = [loop.time()]
        reader = asyncio.create_task(self._read(pubsub, last_seen))
        pinger = asyncio.create_task(self._ping(pubsub, last_seen))
        try:
            done, _ = await asyncio.wait({reader, pinger}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
            raise ConnectionError("broker connection ended")
        finally:
            await cancel_and_wait(reader, pinger, what="the broker reader")

    async def _read(self, pubsub: aioredis.client.PubSub, last_seen: list[float]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            message = await pubsub.get_message(timeout=None)
            last_seen[0] = loop.time()
            if message is None:
                continue
            kind = message["type"]
            raw_channel = message["channel"]
            if kind == "pong" or raw_channel is None:
                continue
            channel = raw_channel.decode()[len(self._prefix) :]
            if kind in ("subscribe", "unsubscribe"):
                confirmed = self._confirmations.get((kind, channel))
                if confirmed is not None and not confirmed.done():
                    confirmed.set_result(None)
            elif kind == "message":
                self._on_message(channel, message["data"])

    def _on_message(self, channel: str, data: bytes) -> None:
        if channel not in self._subscribers:
            return
        if data == _CLOSE_FRAME:
            for queue in list(self._subscribers.get(channel, ())):
                self._end(channel, queue, _END)
            return
        try:
            event = self._codec.decode(data)
        except UnknownEvent as exc:
            log.warning("undecodable event on %s dropped: %s", channel, exc)
            return
        self._deliver(channel, event)

    async def _ping(self, pubsub: aioredis.client.PubSub, last_seen: list[float]) -> None:
        """A silent broker (a dead host, a cut network) is lost after two unanswered intervals."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._ping_interval)
            if loop.time() - last_seen[0] > 2 * self._ping_interval:
                raise ConnectionError(f"no answer from the broker for {2 * self._ping_interval:.0f}s")
            await pubsub.ping()

    async def _lose(self) -> None:
        """Forget the connection; every local subscription ends with UNAVAILABLE."""
        self._set_state("unreachable")
        self._up.clear()
        pubsub, connection = self._pubsub, self._connection
        self._pubsub = self._connection = None
        self._subscribed.clear()
        for confirmed in self._confirmations.values():
            if not confirmed.done():
                confirmed.set_exception(ConnectionError("broker lost"))
                # Its waiter may be gone already (a cancelled subscribe); nobody else reads it.
                confirmed.exception()
        self._end_all(_LOST)
        if pubsub is not None:
            await close_within(pubsub.aclose(), "the broker subscription")  # type: ignore[no-untyped-call]  # redis 8.1: unannotated
        if connection is not None:
            await close_within(connection.aclose(), "the broker connection")
