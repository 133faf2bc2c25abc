"""The server's log during a fuzzing run: no traceback, no error line.

The gateways of the tests run in the test process, so their loggers (``gateway``, aiohttp's
``aiohttp.server`` / ``aiohttp.web`` / ``aiohttp.websocket``, ``asyncio`` for a task that
failed unseen, Strawberry's) are watched here directly: a record with an exception
attached at WARNING or above (what a production log level shows), or any record at ERROR or
above, is a failure of the input that was being tried.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

WATCHED = ("gateway", "aiohttp", "asyncio", "strawberry", "graphql")

#: Log records the fuzzers found whose fix belongs to another change, each with the reason it
#: is let through: (logger, exception type). None now: a WebSocket the client closes while the
#: server sends on it logged ``WebSocketDisconnected`` at ERROR until the WebSocket handlers
#: dropped such messages (``gateway/http/websocket.py``; held by
#: ``tests/integration/test_websocket_caps.py``).
KNOWN: frozenset[tuple[str, str]] = frozenset()


class LogWatch(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        #: Records let through as :data:`KNOWN`.
        self.known = 0

    def emit(self, record: logging.LogRecord) -> None:
        # ``exc_info`` is a tuple, None, or False (asyncio's handler passes False when its
        # context holds no exception).
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and (record.name, type(error).__name__) in KNOWN:
            self.known += 1
            return
        if error is not None or record.levelno >= logging.ERROR:
            self.records.append(record)

    def take(self) -> list[str]:
        """What went wrong since the last call, one line per record (its traceback's last line)."""
        found = []
        for record in self.records:
            line = f"{record.name} {record.levelname}: {record.getMessage()}"
            if record.exc_info and record.exc_info[1] is not None:
                line += f" [{type(record.exc_info[1]).__name__}: {record.exc_info[1]}]"
            found.append(line[:500])
        self.records.clear()
        return found


@contextlib.contextmanager
def watching() -> Iterator[LogWatch]:
    """Watch the server's loggers, each opened to WARNING at least for the run."""
    watch = LogWatch()
    loggers = [logging.getLogger(name) for name in WATCHED]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(watch)
        logger.setLevel(min(logger.getEffectiveLevel(), logging.WARNING))
    try:
        yield watch
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(watch)
            logger.setLevel(level)
