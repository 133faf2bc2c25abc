"""Publish/subscribe behind a small interface: what domains are handed.

Subscriptions (direct messages, room messages, discovered contacts) listen on
named channels. :class:`gateway.broker.memory.InProcessPubSub` fans out inside
one gateway process; with several processes,
:class:`gateway.broker.redis_pubsub.RedisPubSub` implements the same
:class:`PubSub` protocol over a Redis broker, and nothing else changes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal, Protocol

from gateway.errors import BrokerUnavailable
from gateway.tracing import Span, SpanKind, Tracer

#: Why a subscription ends when its process's reader of a channel fell too far behind
#: the channel's events: the backlog is dropped, and the client catches up by resuming.
FELL_BEHIND = "Live updates fell behind; resubscribe with `after:` your last event to catch up."

__all__ = ["FELL_BEHIND", "BrokerState", "BrokerUnavailable", "PubSub", "publishing"]

#: ``in-process``: no broker; ``ok``: the broker answers; ``degraded``: some shards of a Redis
#: Cluster answer, not all (their channels are unavailable); ``unreachable``: it does not (yet).
BrokerState = Literal["in-process", "ok", "degraded", "unreachable"]


class PubSub(Protocol):
    #: Makes a span of each publish; None: tracing is off.
    tracer: Tracer | None

    async def publish(self, channel: str, message: Any) -> None:
        """Deliver ``message`` to the channel's subscribers; never raises for a lost broker."""
        ...

    def subscribe(self, channel: str) -> contextlib.AbstractAsyncContextManager[AsyncIterator[Any]]:
        """Messages published from entry on. Raises :class:`BrokerUnavailable` on entry, or
        from the iterator, when the broker is lost."""
        ...

    def close(self, channel: str) -> None:
        """End every subscription of ``channel``, after the messages already published."""
        ...

    @property
    def state(self) -> BrokerState: ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...


def channel_kind(channel: str) -> str:
    """A channel's name without the part that names a user, a room or a session
    (``user:*:messages``): a span's name, of which there are few."""
    parts = channel.split(":")
    if len(parts) < 2:
        return channel
    return ":".join([parts[0], "*", *parts[2:]])


@contextlib.contextmanager
def publishing(tracer: Tracer, system: str, channel: str) -> Iterator[Span]:
    """The span of one publish on ``channel`` (OpenTelemetry's messaging conventions)."""
    attributes = {
        "messaging.system": system,
        "messaging.operation.type": "send",
        "messaging.destination.name": channel,
    }
    name = f"publish {channel_kind(channel)}"
    with tracer.start_as_current_span(name, kind=SpanKind.PRODUCER, attributes=attributes) as span:
        yield span
