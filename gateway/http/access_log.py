"""The access log: one line per request on the ``aiohttp.access`` logger, at INFO.

aiohttp's own ``AccessLogger`` interprets its format string and formats the
request's start time with ``strftime`` on every request, before the logger
decides whether to emit. This one hands the logger its arguments unformatted
(the log record carries the time), so a line costs a tuple when INFO is on and
a filtered record when a handler drops it. Off (``GATEWAY_HTTP_ACCESS_LOG``
unset) no access logger is installed at all and aiohttp skips even the timing.
"""

from __future__ import annotations

import logging

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse


class AccessLog(AbstractAccessLogger):
    """``<remote> "<method> <path?query>" <status> <body bytes> <milliseconds>ms``."""

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        self.logger.info(
            '%s "%s %s" %d %d %.1fms',
            request.remote,
            request.method,
            request.path_qs,
            response.status,
            response.body_length,
            time * 1000,
        )

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)
