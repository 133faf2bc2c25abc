"""Serve the application on a port until SIGTERM or SIGINT, then drain and return.

``reuse_port`` sets SO_REUSEPORT, so several worker processes
(``gateway/server/workers.py``) listen on the same port and the kernel spreads new
connections over them.

Once the app is ready, what is alive (modules, the schema, the driver's cluster
metadata) is frozen out of the cyclic garbage collector's walks: before, each
full collection walked all of it, a pause of every request in flight and a
visible share of the process's CPU (``bench/NOTES.md``). The young generation's
threshold is raised too: a page of rows allocates thousands of objects, which
the default (700) collected several times per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from typing import Any

import uvloop
from aiohttp import web
from aiohttp.log import access_logger

from gateway.http.access_log import AccessLog
from gateway.server.aiohttp_internals import Deadlines, GatewayRunner
from gateway.server.app import DRAIN, READY
from gateway.settings import Settings

log = logging.getLogger(__name__)

#: Seconds left for aiohttp to end what the drain deadline did not finish.
FINAL_SHUTDOWN_SECONDS = 1.0

#: Allocations (less deallocations) between two collections of the young generation.
GC_YOUNG_THRESHOLD = 10_000


async def settle_heap_when_ready(app: web.Application) -> None:
    """Freeze what is alive once the app is ready, and collect the young generation less often."""
    await app[READY].wait()
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)
    log.info(
        "ready: %d objects frozen out of garbage collection, young-generation threshold %d",
        gc.get_freeze_count(),
        GC_YOUNG_THRESHOLD,
    )


def app_runner(app: web.Application, settings: Settings, **kwargs: Any) -> GatewayRunner:
    """The runner of ``app``: its connections have the head deadline and the keep-alive of
    ``settings``, and aiohttp's access log only when asked for; ``kwargs`` go to aiohttp."""
    return GatewayRunner(
        app,
        deadlines=Deadlines.of(settings),
        keepalive_timeout=settings.keepalive_seconds,
        # Bodies are read as sent: a Content-Encoding is refused (415) before any read, and a
        # body never read is never inflated (in aiohttp's lingering read either).
        auto_decompress=False,
        access_log=access_logger if settings.http_access_log else None,
        access_log_class=AccessLog,
        **kwargs,
    )


async def serve(app: web.Application, settings: Settings, *, reuse_port: bool = False) -> None:
    runner = app_runner(app, settings, handle_signals=False, shutdown_timeout=FINAL_SHUTDOWN_SECONDS)
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.host, settings.port, reuse_port=reuse_port or None)
        await site.start()
        settling = asyncio.create_task(settle_heap_when_ready(app))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        settling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await settling
        drain = app[DRAIN]
        drain.begin()
        log.info("stopping: no new connections; draining for at most %.0fs", settings.drain_seconds)
        await site.stop()
        await drain.finish(settings.drain_seconds)
    finally:
        await runner.cleanup()
    log.info("stopped")


def run(app: web.Application, settings: Settings, *, reuse_port: bool = False) -> None:
    """Serve on uvloop's event loop: the loop's own bookkeeping (ready queue, futures,
    socket reads) is a visible share of a request's CPU under asyncio's."""
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(serve(app, settings, reuse_port=reuse_port))
