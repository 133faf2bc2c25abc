"""A subscriber that falls too far behind its channel: the process's own broker drops its
backlog and ends it with UNAVAILABLE naming the way back (resume from the last event),
never with a quiet end its clients would take for the channel's."""

from __future__ import annotations

import pytest

from gateway.broker.memory import InProcessPubSub
from gateway.broker.pubsub import FELL_BEHIND
from gateway.errors import BrokerUnavailable


async def test_a_subscriber_past_its_bound_ends_with_unavailable() -> None:
    pubsub = InProcessPubSub(queue_size=3)
    async with pubsub.subscribe("room:r:messages") as slow, pubsub.subscribe("room:r:messages") as keeping_up:
        received = []
        for n in range(3):
            await pubsub.publish("room:r:messages", n)
            received.append(await anext(keeping_up))
        for n in range(3, 6):
            await pubsub.publish("room:r:messages", n)
            received.append(await anext(keeping_up))
        assert received == [0, 1, 2, 3, 4, 5]
        assert pubsub.subscriber_count("room:r:messages") == 1  # the slow one is off the channel
        with pytest.raises(BrokerUnavailable) as ended:
            await anext(slow)  # the backlog dropped: the end comes first
        assert str(ended.value) == FELL_BEHIND
        await pubsub.publish("room:r:messages", 6)
        assert await anext(keeping_up) == 6


async def test_a_subscriber_within_its_bound_gets_everything_and_a_close_ends_it_quietly() -> None:
    pubsub = InProcessPubSub(queue_size=3)
    async with pubsub.subscribe("c") as events:
        for n in range(3):  # the bound: the end still fits behind them
            await pubsub.publish("c", n)
        pubsub.close("c")
        assert [event async for event in events] == [0, 1, 2]
