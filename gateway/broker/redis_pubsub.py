"""The :class:`~gateway.broker.pubsub.PubSub` protocol over a Redis broker: one Redis, or a
Redis Cluster through sharded pub/sub.

Redis pub/sub only fans out; Cassandra stays the system of record, so an event
the broker drops is never data lost (clients catch up by querying).

A process holds one subscriber connection per shard, whatever the number of
subscriptions: with one Redis that is one connection (``SUBSCRIBE``/``PUBLISH``);
with a cluster (``redis+cluster://``), one to each master, and a channel is
``SSUBSCRIBE``d on the master of its slot and published with ``SPUBLISH``, so a
message crosses only that master and fan-out capacity grows with the shards. A
channel is subscribed while at least one local subscriber listens to it, and each
message is decoded once and handed to every local subscriber's bounded queue.
Publishing uses a small separate client. Channels are prefixed with a namespace
(the keyspace), so deployments sharing one broker never hear each other.

redis-py's own cluster pub/sub (``RedisCluster.pubsub().ssubscribe``) is not used:
it reads its per-node connections in turn with a timeout (a poll) and quietly
subscribes again after a lost connection, so the events published in between are
missed without the subscriber knowing. Here each shard's connection is read by a
task of its own, and its loss is told to the subscribers it carried.

When a shard's connection is lost (an error, or no answer to a PING for two
intervals), the local subscriptions of the channels on that shard end with
:class:`BrokerUnavailable` (``UNAVAILABLE``: the client resubscribes), new
subscriptions to its channels are refused the same way, while the other shards'
channels, queries and mutations go on. ``state`` is ``ok`` while every shard
answers, ``degraded`` while some do and ``unreachable`` while none does. Each
connection is retried with jittered exponential back-off; once it is back, its
channels can be subscribed again. With a cluster, the slots map is read again after
a loss, after a slot moved (a master refusing a subscription with ``MOVED``, or
ending one because its slot migrated) and every ``topology_interval`` seconds, and a
shard is added or retired as masters join or leave.

Publishing does not wait for this process's subscriber connection: an event is
sent whenever its shard answers, and logged and dropped when it does not. The
processes reconnect at different moments (each with its own back-off), and a
process that dropped its events until its own subscriber was back would drop
them while another process, back already, had subscribers live again: they
would miss those events without their subscription ending, a gap no resume
could see. A shard that refuses the connection costs each publish a refused
connect on the loopback or LAN; one that does not answer costs a publish the
timeout, after which publishing to that shard pauses for ``PUBLISH_PAUSE``
seconds (its events dropped meanwhile), so a silent shard costs one timeout per
pause, not one per mutation.

``close(channel)`` is itself a message on the channel, so it ends the
channel's subscriptions in every process, after what was published before it.

Each frame says when it was published; ``lag_listener`` is told, for every event a
local subscriber takes, how many seconds after its publication that was.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisClusterException, RedisError, ResponseError

from gateway.broker.codec import EventCodec, UnknownEvent
from gateway.broker.pubsub import FELL_BEHIND, BrokerState, BrokerUnavailable, publishing
from gateway.broker.redis_client import (
    BoundedCluster,
    BrokerClient,
    close_within,
    cluster_client,
    node_client,
)
from gateway.settings.values import cluster_url
from gateway.tasks import cancel_and_wait
from gateway.tracing import Tracer

log = logging.getLogger(__name__)

_CLOSE_FRAME = b'{"close":1}'
#: Seconds publishing to a shard pauses after a publish it did not answer in time.
PUBLISH_PAUSE = 1.0


class _Lost:
    """Queue marker: the broker (the channel's shard) was lost."""


_LOST = _Lost()
_END = object()
#: Queue marker: the subscriber fell too far behind (its backlog was dropped).
_BEHIND = object()

_Queue = asyncio.Queue[Any]


class _Shard:
    """One subscriber connection and the channels subscribed on it: the one Redis, or one
    master of a cluster."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.url = url
        self.subscribed: set[str] = set()
        self.confirmations: dict[tuple[str, str], asyncio.Future[None]] = {}
        self.lock = asyncio.Lock()
        self.pubsub: aioredis.client.PubSub | None = None
        self.connection: aioredis.Redis | None = None
        self.up = False
        self.failures = 0
        #: Loop time until which publishes to this shard are dropped unsent (after a timeout).
        self.paused_until = 0.0
        self.retired = False
        self.runner: asyncio.Task[None] | None = None


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
        topology_interval: float = 30.0,
    ) -> None:
        self.url = url
        self._codec = codec
        self._prefix = f"{namespace}:"
        self._queue_size = queue_size
        self._ping_interval = ping_interval
        self._max_backoff = max_backoff
        self._timeout = timeout
        self._topology_interval = topology_interval
        self._cluster = cluster_url(url)
        #: The commands and message types of plain or sharded pub/sub.
        if self._cluster is None:
            self._subscribe, self._unsubscribe, self._message = "subscribe", "unsubscribe", "message"
        else:
            self._subscribe, self._unsubscribe, self._message = "ssubscribe", "sunsubscribe", "smessage"
        self._subscribers: dict[str, set[_Queue]] = defaultdict(set)
        #: The shard each subscribed channel is subscribed on.
        self._placed: dict[str, _Shard] = {}
        self._shards: dict[str, _Shard] = {}
        self._state: BrokerState = "unreachable"
        #: Told every change of ``state`` (the metrics' broker gauge).
        self.state_listener: Callable[[BrokerState], None] | None = None
        #: Told the shards this process cannot reach, and how many there are.
        self.shards_listener: Callable[[int, int], None] | None = None
        #: Told, for each event a local subscriber takes, the seconds since it was published.
        self.lag_listener: Callable[[float], None] | None = None
        self._up = asyncio.Event()
        self._topology_changed = asyncio.Event()
        self._topology: asyncio.Task[None] | None = None
        self._started = False
        self._closed = False
        self._background: set[asyncio.Task[Any]] = set()
        # One retry: a pooled connection the broker's restart closed fails its first use
        # (the command never reached the new broker), and dropping that event would leave a
        # gap in subscriptions that are live again. Were a publish's answer lost after the
        # broker ran it (a connection cut in between), the retry would deliver that event
        # twice: rarer, and visible (every event carries its id), where a gap is not.
        self._publisher: BrokerClient = self._client(self.url, max_connections=16, retries=1)
        self.tracer: Tracer | None = None

    def _client(self, url: str, max_connections: int = 2, retries: int = 0) -> BrokerClient:
        """A client that fails fast: retrying is this class's job, so nothing retries silently
        (beyond ``retries`` immediate resends on a connection found closed)."""
        if self._cluster is not None and url == self.url:
            return cluster_client(
                self._cluster, max_connections=max_connections, timeout=self._timeout, retries=retries
            )
        return node_client(url, max_connections=max_connections, timeout=self._timeout, retries=retries)

    @property
    def sharded(self) -> bool:
        return self._cluster is not None

    @property
    def state(self) -> BrokerState:
        return self._state

    def shards(self) -> dict[str, bool]:
        """Each shard's name (``host:port`` of a master, or the URL) and whether it answers."""
        return {name: shard.up for name, shard in self._shards.items()}

    def _update_state(self) -> None:
        shards = [shard for shard in self._shards.values() if not shard.retired]
        up = sum(shard.up for shard in shards)
        state: BrokerState = "ok" if shards and up == len(shards) else "degraded" if up else "unreachable"
        if self.shards_listener is not None:
            self.shards_listener(len(shards) - up if shards else 1, max(len(shards), 1))
        if state == "ok":
            self._up.set()
        else:
            self._up.clear()
        if state != self._state:
            self._state = state
            if self.state_listener is not None:
                self.state_listener(state)

    async def start(self) -> None:
        """Connect in the background; ``connected`` waits until every shard answers."""
        if self._started:
            return
        self._started = True
        if self._cluster is None:
            self._add_shard(self.url, self.url)
        else:
            self._topology = asyncio.create_task(self._follow_topology(), name="redis-topology")

    async def connected(self) -> None:
        await self._up.wait()

    async def aclose(self) -> None:
        self._closed = True
        runners = [shard.runner for shard in self._shards.values()]
        await cancel_and_wait(self._topology, *runners, *self._background, what="the broker subscriber")
        self._topology = None
        self._end_channels(list(self._subscribers), _END)
        await close_within(self._publisher.aclose(), "the broker publisher")

    # -- publishing ------------------------------------------------------------

    async def publish(self, channel: str, message: Any) -> None:
        data = self._codec.encode(message, at=time.time())
        if self.tracer is None:
            await self._send(channel, data)
            return
        with publishing(self.tracer, "redis", channel) as span:
            span.set_attribute("messaging.message.body.size", len(data))
            await self._send(channel, data)

    def close(self, channel: str) -> None:
        self._spawn(self._send(channel, _CLOSE_FRAME))

    async def _send(self, channel: str, data: bytes) -> None:
        shard = self._shard_of(channel)
        loop = asyncio.get_running_loop()
        if shard is None or loop.time() < shard.paused_until:
            log.warning("broker unreachable; event on %s dropped", channel)
            return
        try:
            async with asyncio.timeout(self._timeout):
                if self._cluster is None:
                    await self._publisher.publish(self._prefix + channel, data)
                else:
                    await self._publisher.spublish(self._prefix + channel, data)
        except TimeoutError:
            shard.paused_until = loop.time() + PUBLISH_PAUSE
            log.warning("broker publish on %s timed out; event dropped, publishing paused", channel)
        except (RedisError, OSError) as exc:
            log.warning("broker publish on %s failed (%s); event dropped", channel, exc)

    # -- subscribing -----------------------------------------------------------

    @contextlib.asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[AsyncIterator[Any]]:
        """Registers locally before the first ``await``, and returns once Redis confirmed the
        channel: nothing published (in any process) after entry is missed."""
        shard = self._shard_of(channel)
        if shard is None or not shard.up:
            raise BrokerUnavailable()
        queue: _Queue = asyncio.Queue(maxsize=self._queue_size + 1)
        self._subscribers[channel].add(queue)
        try:
            await self._sync(channel)

            async def messages() -> AsyncIterator[Any]:
                while True:
                    item = await queue.get()
                    if item is _END:
                        return
                    if item is _LOST:
                        raise BrokerUnavailable()
                    if item is _BEHIND:
                        raise BrokerUnavailable(FELL_BEHIND)
                    message, at = item
                    if at is not None and self.lag_listener is not None:
                        self.lag_listener(max(0.0, time.time() - at))
                    yield message

            yield messages()
        finally:
            self._discard(channel, queue)
            if channel not in self._subscribers and channel in self._placed:
                self._spawn(self._sync(channel))

    def subscriber_count(self, channel: str) -> int:
        return len(self._subscribers.get(channel, ()))

    def _shard_of(self, channel: str) -> _Shard | None:
        """The shard that carries ``channel``: the one Redis, or the master of its slot."""
        if self._cluster is None:
            return self._shards.get(self.url)
        assert isinstance(self._publisher, BoundedCluster)
        try:
            node = self._publisher.get_node_from_key(self._prefix + channel)
        except (RedisError, RedisClusterException):
            return None
        return None if node is None else self._shards.get(node.name)

    async def _sync(self, channel: str) -> None:
        """Make Redis's subscription to ``channel`` match whether anyone here listens to it."""
        placed = self._placed.get(channel)
        shard = placed if placed is not None else self._shard_of(channel)
        if shard is None:
            if channel in self._subscribers:
                raise BrokerUnavailable()
            return
        async with shard.lock:
            pubsub = shard.pubsub
            wanted = channel in self._subscribers
            if wanted == (channel in shard.subscribed):
                return
            if pubsub is None or not shard.up:
                if wanted:
                    raise BrokerUnavailable()
                return
            kind = self._subscribe if wanted else self._unsubscribe
            confirmed = asyncio.get_running_loop().create_future()
            # A loss may fail it after its waiter gave up: nobody else reads that error.
            confirmed.add_done_callback(lambda f: f.cancelled() or f.exception())
            shard.confirmations[(kind, channel)] = confirmed
            try:
                await pubsub.execute_command(kind.upper(), self._prefix + channel)
                async with asyncio.timeout(self._timeout * 2):
                    await asyncio.shield(confirmed)
            except (RedisError, OSError, TimeoutError) as exc:
                if wanted:
                    raise BrokerUnavailable() from exc
                return
            finally:
                shard.confirmations.pop((kind, channel), None)
            if wanted:
                shard.subscribed.add(channel)
                self._placed[channel] = shard
            else:
                shard.subscribed.discard(channel)
                self._placed.pop(channel, None)

    def _deliver(self, channel: str, item: tuple[Any, float | None]) -> None:
        for queue in list(self._subscribers.get(channel, ())):
            try:
                queue.put_nowait(item)
            except asyncio.QueueFull:
                log.warning("subscriber of %s fell behind; ending its subscription", channel)
                self._end(channel, queue, _BEHIND)

    def _end(self, channel: str, queue: _Queue, marker: object) -> None:
        self._discard(channel, queue)
        while True:
            try:
                queue.put_nowait(marker)
                return
            except asyncio.QueueFull:
                queue.get_nowait()

    def _end_channels(self, channels: list[str], marker: object) -> None:
        for channel in channels:
            for queue in list(self._subscribers.get(channel, ())):
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

    # -- the cluster's shards ----------------------------------------------------

    def _add_shard(self, name: str, url: str) -> None:
        shard = _Shard(name, url)
        self._shards[name] = shard
        shard.runner = asyncio.create_task(self._run(shard), name=f"redis-pubsub {name}")
        self._update_state()

    async def _follow_topology(self) -> None:
        """Read the cluster's masters, start a shard for each new one and retire those gone;
        again after a loss or a moved slot, and every ``topology_interval`` seconds."""
        assert self._cluster is not None and isinstance(self._publisher, BoundedCluster)
        cluster, client = self._cluster, self._publisher
        failures = 0
        while not self._closed:
            self._topology_changed.clear()
            try:
                async with asyncio.timeout(self._timeout * 2):
                    if client.nodes_manager.slots_cache:
                        await client.nodes_manager.initialize()
                    else:
                        await client.initialize()
                masters = {node.name: (node.host, int(node.port)) for node in client.get_primaries()}
            except (RedisError, RedisClusterException, OSError, TimeoutError) as exc:
                if failures == 0:
                    log.warning("broker cluster %s: slots map not read (%s); retrying", self.url, exc)
                failures += 1
                await asyncio.sleep(min(self._max_backoff, 0.1 * 2 ** min(failures, 10)))
                continue
            failures = 0
            for name, (host, port) in masters.items():
                if name not in self._shards:
                    log.info("broker cluster: master %s joins", name)
                    self._add_shard(name, cluster.node_url(host, port))
            for name in [name for name in self._shards if name not in masters]:
                log.info("broker cluster: master %s left", name)
                await self._retire(self._shards.pop(name))
            self._update_state()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._topology_interval):
                    await self._topology_changed.wait()
            # A burst of losses or moves is read once.
            await asyncio.sleep(0.2)

    async def _retire(self, shard: _Shard) -> None:
        shard.retired = True
        await cancel_and_wait(shard.runner, what=f"the broker shard {shard.name}")
        await self._lose(shard)

    # -- a shard's connection --------------------------------------------------------

    async def _run(self, shard: _Shard) -> None:
        while not self._closed and not shard.retired:
            try:
                await self._session(shard)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if shard.up:
                    log.warning("broker %s lost (%s); its subscriptions end, reconnecting", shard.name, exc)
                elif shard.failures == 0:
                    log.warning("broker %s unreachable (%s); retrying", shard.name, exc)
                shard.failures += 1
            finally:
                await self._lose(shard)
            delay = min(self._max_backoff, 0.1 * 2 ** min(shard.failures, 10))
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))

    async def _session(self, shard: _Shard) -> None:
        """One connection's life: connect, then read and ping until something fails."""
        connection = self._client(shard.url)
        assert isinstance(connection, aioredis.Redis)
        shard.connection = connection
        shard.pubsub = pubsub = connection.pubsub()
        async with asyncio.timeout(self._timeout):
            await pubsub.connect()  # type: ignore[no-untyped-call]  # redis 8.1: unannotated
            await pubsub.ping()
            first = await pubsub.get_message(timeout=None)
        if first is None or first.get("type") != "pong":
            raise ConnectionError(f"unexpected first answer from the broker: {first!r}")
        shard.up = True
        shard.failures = 0
        self._update_state()
        log.info("broker %s connected", shard.name)
        loop = asyncio.get_running_loop()
        last_seen = [loop.time()]
        reader = asyncio.create_task(self._read(shard, pubsub, last_seen))
        pinger = asyncio.create_task(self._ping(pubsub, last_seen))
        try:
            done, _ = await asyncio.wait({reader, pinger}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
            raise ConnectionError("broker connection ended")
        finally:
            await cancel_and_wait(reader, pinger, what="the broker reader")

    async def _read(self, shard: _Shard, pubsub: aioredis.client.PubSub, last_seen: list[float]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                message = await pubsub.get_message(timeout=None)
            except ResponseError as exc:
                # A subscription refused (MOVED: its slot is another master's now). Subscriptions
                # are sent one at a time per shard, so it is the one awaiting its confirmation.
                last_seen[0] = loop.time()
                for pending in shard.confirmations.values():
                    if not pending.done():
                        pending.set_exception(exc)
                self._topology_changed.set()
                continue
            last_seen[0] = loop.time()
            if message is None:
                continue
            kind = message["type"]
            raw_channel = message["channel"]
            if kind == "pong" or raw_channel is None:
                continue
            channel = raw_channel.decode()[len(self._prefix) :]
            if kind in (self._subscribe, self._unsubscribe):
                confirmed = shard.confirmations.get((kind, channel))
                if confirmed is not None and not confirmed.done():
                    confirmed.set_result(None)
                elif kind == self._unsubscribe and channel in shard.subscribed:
                    self._moved_away(shard, channel)
            elif kind == self._message:
                self._on_message(channel, message["data"])

    def _moved_away(self, shard: _Shard, channel: str) -> None:
        """A master ended a subscription nobody here ended: its slot migrated to another
        master. Its subscribers resubscribe, and find the new owner."""
        log.warning("broker %s ended the subscription of %s (its slot moved)", shard.name, channel)
        shard.subscribed.discard(channel)
        self._placed.pop(channel, None)
        self._end_channels([channel], _LOST)
        self._topology_changed.set()

    def _on_message(self, channel: str, data: bytes) -> None:
        if channel not in self._subscribers:
            return
        if data == _CLOSE_FRAME:
            for queue in list(self._subscribers.get(channel, ())):
                self._end(channel, queue, _END)
            return
        try:
            item = self._codec.decode_stamped(data)
        except UnknownEvent as exc:
            log.warning("undecodable event on %s dropped: %s", channel, exc)
            return
        self._deliver(channel, item)

    async def _ping(self, pubsub: aioredis.client.PubSub, last_seen: list[float]) -> None:
        """A silent broker (a dead host, a cut network) is lost after two unanswered intervals."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._ping_interval)
            if loop.time() - last_seen[0] > 2 * self._ping_interval:
                raise ConnectionError(f"no answer from the broker for {2 * self._ping_interval:.0f}s")
            await pubsub.ping()

    async def _lose(self, shard: _Shard) -> None:
        """Forget the shard's connection; every local subscription of its channels ends with
        UNAVAILABLE."""
        shard.up = False
        pubsub, connection = shard.pubsub, shard.connection
        shard.pubsub = shard.connection = None
        for pending in shard.confirmations.values():
            if not pending.done():
                pending.set_exception(ConnectionError("broker lost"))
                # Its waiter may be gone already (a cancelled subscribe); nobody else reads it.
                pending.exception()
        lost = [channel for channel, placed in self._placed.items() if placed is shard]
        for channel in lost:
            del self._placed[channel]
        shard.subscribed.clear()
        self._end_channels(lost, _LOST)
        self._update_state()
        if self._cluster is not None and not self._closed:
            self._topology_changed.set()
        if pubsub is not None:
            await close_within(pubsub.aclose(), "the broker subscription")  # type: ignore[no-untyped-call]  # redis 8.1: unannotated
        if connection is not None:
            await close_within(connection.aclose(), "the broker connection")
