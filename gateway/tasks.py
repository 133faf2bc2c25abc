"""Stopping background tasks, and bounding waits, for certain.

On Python 3.11, ``asyncio.wait_for`` returns the awaited result instead of raising
``CancelledError`` when a cancel arrives in the same loop iteration as that result
(python/cpython#86296, fixed in 3.12). A task looping over ``wait_for`` can so
survive its ``cancel()``, and whoever awaits it after cancelling waits forever.
The gateway therefore bounds its waits with ``asyncio.timeout`` (which counts
cancellations), and stops its tasks with :func:`cancel_and_wait`, which cancels
again until they are done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

log = logging.getLogger(__name__)

#: Seconds between the cancels of a task that outlives one.
RECANCEL_SECONDS = 1.0


async def cancel_and_wait(*tasks: asyncio.Future[Any] | None, what: str) -> None:
    """Cancel ``tasks`` and wait until each is done, cancelling again every second
    until it is; their results and errors are discarded."""
    pending = {task for task in tasks if task is not None}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=RECANCEL_SECONDS)
        if pending:
            log.warning("%s still running %.0fs after a cancel; cancelling again", what, RECANCEL_SECONDS)
    for finished in tasks:
        if finished is not None and not finished.cancelled():
            finished.exception()  # retrieved: nobody else will read it


async def finish_within(work: Awaitable[object], seconds: float, what: str) -> bool:
    """Await ``work`` for at most ``seconds``, errors logged and ignored; True if it finished.

    Unlike a timeout, this never waits for ``work`` to take its cancel: a close that
    ignores cancellation cannot hold up a shutdown."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        task.cancel()
        log.warning("%s took over %.0fs; left to finish on its own", what, seconds)
        return False
    if not task.cancelled() and (error := task.exception()) is not None:
        log.debug("%s failed: %s", what, error)
    return True
