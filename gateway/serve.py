"""Serve the application on a port until SIGTERM or SIGINT, then drain and return.

``reuse_port`` sets SO_REUSEPORT, so several worker processes
(``gateway/workers.py``) listen on the same port and the kernel spreads new
connections over them.
"""

from __future__ import annotations

import asyncio
import logging
import signal

import uvloop
from aiohttp import web
from aiohttp.log import access_logger

from gateway.app import DRAIN
from gateway.http.access_log import AccessLog
from gateway.settings import Settings

log = logging.getLogger(__name__)

#: Seconds left for aiohttp to end what the drain deadline did not finish.
FINAL_SHUTDOWN_SECONDS = 1.0


async def serve(app: web.Application, settings: Settings, *, reuse_port: bool = False) -> None:
    runner = web.AppRunner(
        app,
        handle_signals=False,
        shutdown_timeout=FINAL_SHUTDOWN_SECONDS,
        access_log=access_logger if settings.http_access_log else None,
        access_log_class=AccessLog,
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.host, settings.port, reuse_port=reuse_port or None)
        await site.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
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
