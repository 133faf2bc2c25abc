"""Log lines for people (text) or for a log pipeline (one JSON object a line).

``GATEWAY_LOG_FORMAT`` chooses; unset, a terminal gets text and anything else
(a file, journald, a container runtime) JSON. A JSON line has ``time`` (UTC,
ISO 8601), ``level``, ``logger`` and ``message``, plus the fields a record
carries as ``extra``: the access line of each GraphQL operation
(``gateway.access``) adds ``requestId``, ``operation``, ``user``,
``durationMs``, ``statements`` and ``outcome``.

Every line written while a request is handled carries that request's id
(``requestId``, the ``X-Request-Id`` its response echoes) and, when it is part of
a trace, the trace's id (``traceId``): :class:`RequestContext` takes them from the
request's context (``gateway/tracing.py``). A text line shows the id in brackets
after the logger's name.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson

from gateway.settings import Settings
from gateway.tracing import request_id, trace_id

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s%(request)s: %(message)s"

#: Attributes every ``LogRecord`` has; the others were passed as ``extra``.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class RequestContext(logging.Filter):
    """Adds ``requestId`` and ``traceId`` of the request being handled to each record
    (a record given its own ``requestId`` as ``extra`` keeps it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        add_context_ids(vars(record))
        return True


def add_context_ids(fields: dict[str, Any]) -> None:
    """Set ``requestId`` and ``traceId`` in ``fields`` (a record's attributes, or a line's
    fields) to those of the request being handled, where they are missing or None."""
    if fields.get("requestId") is None:
        current = request_id.get()
        if current is not None:
            fields["requestId"] = current
    if fields.get("traceId") is None:
        trace = trace_id()
        if trace is not None:
            fields["traceId"] = trace


class TextFormatter(logging.Formatter):
    """:data:`TEXT_FORMAT`: the request id in brackets after the logger's name, when there is one."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        current = getattr(record, "requestId", None)
        record.request = f" [{current}]" if current else ""
        return super().formatMessage(record)


class JsonFormatter(logging.Formatter):
    """One JSON object a line, written with orjson (a line per request is on the hot path);
    a value orjson cannot write goes as ``str(value)``, as with ``json.dumps(default=str)``."""

    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._second_text = ""

    def _time(self, created: float) -> str:
        """``created`` in ISO 8601 to the millisecond (UTC); the text of the second is kept."""
        second = int(created)
        micros = round((created - second) * 1_000_000)  # rounded as datetime.fromtimestamp does
        if micros >= 1_000_000:
            second, micros = second + 1, micros - 1_000_000
        if second != self._second:
            self._second_text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
            self._second = second
        return f"{self._second_text}.{micros // 1000:03d}+00:00"

    def head(self, created: float, level: str, logger: str, message: str) -> dict[str, Any]:
        """The keys every line starts with, in their order."""
        return {"time": self._time(created), "level": level, "logger": logger, "message": message}

    def format(self, record: logging.LogRecord) -> str:
        entry = self.head(record.created, record.levelname, record.name, record.getMessage())
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and key[0] != "_" and key != "request":
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return self.encode(entry)

    @staticmethod
    def encode(entry: dict[str, Any]) -> str:
        try:
            return orjson.dumps(entry, default=str).decode()
        except TypeError:  # what orjson refuses outright (an int past 64 bits, a key not a str)
            return json.dumps(entry, default=str, ensure_ascii=False)


class JsonLines(logging.StreamHandler[TextIO]):
    """The JSON handler of :func:`log_handler` (:class:`JsonFormatter`, :class:`RequestContext`),
    which can also write a line from its fields (:meth:`write_fields`) for a caller that knows
    no other handler or filter would see its record: a ``LogRecord`` and the trip through the
    logger are most of an access line's cost, and there is one a request."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self.setFormatter(JsonFormatter())
        self.addFilter(RequestContext())

    def write_fields(self, logger: str, level: int, message: str, fields: Mapping[str, Any]) -> bool:
        """Write the line a record of ``logger`` at ``level`` with ``message`` and ``fields`` as
        ``extra`` would make here, byte for byte: the same keys in the same order, the
        request's and trace's ids added as :class:`RequestContext` adds them. False, having
        written nothing, when the handler is no longer as made (another formatter or filter)
        or the level is below its own; False too when the stream fails (the caller then logs
        the usual way, and logging reports the failure as it does)."""
        formatter = self.formatter
        if (
            level < self.level
            or type(formatter) is not JsonFormatter
            or len(self.filters) != 1
            or type(self.filters[0]) is not RequestContext
        ):
            return False
        entry = formatter.head(time.time(), logging.getLevelName(level), logger, message)
        entry.update(fields)
        add_context_ids(entry)
        text = formatter.encode(entry)
        try:
            self.acquire()
            try:
                self.stream.write(text + self.terminator)
                self.flush()
            finally:
                self.release()
        except Exception:  # a closed or failing stream
            return False
        return True


def log_format(settings: Settings, stream: TextIO) -> str:
    if settings.log_format:
        return settings.log_format
    return "text" if stream.isatty() else "json"


def log_handler(settings: Settings, stream: TextIO) -> logging.Handler:
    """A handler writing to ``stream`` in the configured format, each line with its request's id."""
    if log_format(settings, stream) == "json":
        return JsonLines(stream)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TextFormatter())
    handler.addFilter(RequestContext())
    return handler


def configure_logging(settings: Settings, stream: TextIO | None = None) -> None:
    """One handler on the root logger, in the configured format and level."""
    handler = log_handler(settings, stream or sys.stderr)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level)
    level = max(logging.WARNING, logging.getLevelName(settings.log_level))
    logging.getLogger("cassandra").setLevel(level)
