"""A subscription without a sink of its own (its socket was already closing when it started)
waits on its queue for the next event: however that wait ends, nothing of it is left pending.
A pending task collected with its queue is logged by asyncio as destroyed, an error line in
the server's log for a client that merely went away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest

from gateway.graph.live import Follow, Verdict


def _getters(before: frozenset[asyncio.Task[Any]] = frozenset()) -> list[asyncio.Task[Any]]:
    """Tasks waiting on a queue, other than ``before``."""
    tasks = [task for task in asyncio.all_tasks() if not task.done() and task not in before]
    return [task for task in tasks if getattr(task.get_coro(), "__qualname__", "") == "Queue.get"]


async def _following() -> tuple[Follow, AsyncGenerator[Any, None], frozenset[asyncio.Task[Any]]]:
    """A subscription that delivered its first event; the queue waits there were before it."""
    before = frozenset(_getters())
    follow = Follow(hub=cast(Any, None), channel="room:r", operation=None)
    await follow.go_live(lambda _: Verdict.DELIVER, lambda event: {"event": event}, viewer=None, token=None)
    assert follow.queue is not None
    follow.queue.put_nowait(1)
    events = cast(AsyncGenerator[Any, None], follow.events())
    assert await anext(events) == {"event": 1}
    return follow, events, before


async def test_cancelled_while_waiting_it_leaves_no_getter_pending() -> None:
    _, events, before = await _following()
    waiting = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0.01)
    (getter,) = _getters(before)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.sleep(0)
    assert getter.cancelled()
    assert not _getters(before)


async def test_ended_while_waiting_it_stops_and_leaves_no_getter_pending() -> None:
    follow, events, before = await _following()
    waiting = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0.01)
    (getter,) = _getters(before)
    follow.end()
    with pytest.raises(StopAsyncIteration):
        await waiting
    await asyncio.sleep(0)
    assert getter.cancelled()
    assert not _getters(before)


async def test_an_event_that_arrives_while_waiting_is_delivered() -> None:
    follow, events, before = await _following()
    waiting = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0.01)
    assert follow.queue is not None
    follow.queue.put_nowait(2)
    assert await waiting == {"event": 2}
    await events.aclose()
    assert not _getters(before)
