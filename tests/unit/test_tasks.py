"""Stopping background tasks for certain (``gateway/tasks.py``): a task that lives
through one cancel, as a loop over ``asyncio.wait_for`` can on Python 3.11, is
still stopped, and a bounded wait never waits for its work to take a cancel."""

from __future__ import annotations

import asyncio
import sys

import pytest

from gateway.tasks import RECANCEL_SECONDS, cancel_and_wait, finish_within


async def _swallows_cancels(count: int, cancels: list[int], release: asyncio.Event) -> None:
    """Lives through ``count`` cancels, then ends at the next one or at ``release``."""
    while True:
        try:
            await release.wait()
            return
        except asyncio.CancelledError:
            cancels.append(1)
            if len(cancels) > count:
                raise


async def test_a_task_that_lives_through_a_cancel_is_cancelled_again_until_done() -> None:
    cancels: list[int] = []
    task = asyncio.create_task(_swallows_cancels(2, cancels, asyncio.Event()))
    await asyncio.sleep(0)
    async with asyncio.timeout(RECANCEL_SECONDS * 3 + 2):
        await cancel_and_wait(task, what="a stubborn task")
    assert task.cancelled()
    assert len(cancels) == 3


async def test_tasks_already_done_or_failed_are_waited_for_without_complaint() -> None:
    async def fails() -> None:
        raise ValueError("read by nobody")

    done = asyncio.create_task(asyncio.sleep(0))
    failed = asyncio.create_task(fails())
    await asyncio.sleep(0.01)
    await cancel_and_wait(done, failed, None, what="finished tasks")
    assert done.done() and isinstance(failed.exception(), ValueError)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="asyncio.wait_for counts cancels from 3.12")
async def test_a_loop_over_wait_for_can_outlive_its_cancel_on_python_3_11() -> None:
    """Why the gateway needs ``cancel_and_wait``: the cancel arrives in the same loop
    iteration as the awaited result, and ``wait_for`` returns the result instead."""
    wake = asyncio.Event()
    rounds: list[int] = []

    async def worker() -> None:
        while True:
            await asyncio.wait_for(wake.wait(), 60)
            wake.clear()
            rounds.append(1)

    task = asyncio.create_task(worker())
    await asyncio.sleep(0)
    wake.set()
    task.cancel()
    await asyncio.sleep(0.05)
    assert not task.done() and rounds == [1], "one cancel was swallowed"
    await cancel_and_wait(task, what="the worker")
    assert task.cancelled()


async def test_a_bounded_wait_gives_up_on_work_that_ignores_its_cancel() -> None:
    release = asyncio.Event()
    cancels: list[int] = []
    work = _swallows_cancels(10, cancels, release)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await finish_within(work, 0.5, "work that ignores cancels") is False
    assert 0.5 <= loop.time() - started < 1.5
    release.set()


async def test_a_bounded_wait_reports_work_finished_even_when_it_failed() -> None:
    async def fails() -> None:
        raise OSError("connection reset")

    assert await finish_within(fails(), 1.0, "a failing close") is True
    assert await finish_within(asyncio.sleep(0), 1.0, "a quick close") is True
