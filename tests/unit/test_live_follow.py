"""A subscription without a sink of its own (its socket was already closing when it started)
waits on its queue for the next event: however that wait ends, nothing of it is left pending.
A pending task collected with its queue is logged by asyncio as destroyed, an error line in
the server's log for a client that merely went away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any, cast

import pytest

from gateway.graph.live import Follow, Verdict


def _getters(before: frozenset[asyncio.Task[Any]] = frozenset()) -> list[asyncio.Task[Any]]:
    """Tasks waiting on a queue, other than ``before``."""
    tasks = [task for task in asyncio.all_tasks() if not task.done() and task not in before]
    return [task for task in tasks if getattr(task.get_coro(), "__qualname__", "") == "Queue.get"]


async def _waiting() -> tuple[Follow, asyncio.Future[Any], asyncio.Task[Any]]:
    """A subscription that delivered its first event and now waits for the next: the wait,
    and the task getting that next event from its queue."""
    before = frozenset(_getters())
    follow = Follow(hub=cast(Any, None), channel="room:r", operation=None)
    await follow.go_live(lambda _: Verdict.DELIVER, lambda event: {"event": event}, viewer=None, token=None)
    assert follow.queue is not None
    follow.queue.put_nowait(1)
    events = cast(AsyncGenerator[Any, None], follow.events())
    assert await anext(events) == {"event": 1}
    waiting = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0)  # one turn of the loop: the wait starts and creates its getter
    (getter,) = _getters(before)
    return follow, waiting, getter


@pytest.mark.parametrize(
    ("end", "raised"),
    [
        (lambda follow, waiting: waiting.cancel(), asyncio.CancelledError),  # the client went away
        (lambda follow, waiting: follow.end(), StopAsyncIteration),  # the subscription ended
    ],
    ids=["cancelled", "ended"],
)
async def test_a_wait_that_ends_leaves_no_getter_pending(
    end: Callable[[Follow, asyncio.Future[Any]], Any], raised: type[BaseException]
) -> None:
    follow, waiting, getter = await _waiting()
    end(follow, waiting)
    with pytest.raises(raised):
        await waiting
    await asyncio.sleep(0)
    assert getter.cancelled()


async def test_an_event_that_arrives_while_waiting_is_delivered() -> None:
    follow, waiting, getter = await _waiting()
    assert follow.queue is not None
    follow.queue.put_nowait(2)
    assert await waiting == {"event": 2}
    assert getter.done() and not getter.cancelled()
