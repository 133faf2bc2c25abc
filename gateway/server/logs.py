"""Log lines for people (text) or for a log pipeline (one JSON object a line).

``GATEWAY_LOG_FORMAT`` chooses; unset, a terminal gets text and anything else
(a file, journald, a container runtime) JSON. A JSON line has ``time`` (UTC,
ISO 8601), ``level``, ``logger`` and ``message``, plus the fields a record
carries as ``extra``: the access line of each GraphQL operation
(``gateway.access``) adds ``requestId``, ``operation``, ``user``,
``durationMs``, ``statements`` and ``outcome``.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from gateway.settings import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: Attributes every ``LogRecord`` has; the others were passed as ``extra``.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def log_format(settings: Settings, stream: TextIO) -> str:
    if settings.log_format:
        return settings.log_format
    return "text" if stream.isatty() else "json"


def configure_logging(settings: Settings, stream: TextIO | None = None) -> None:
    """One handler on the root logger, in the configured format and level."""
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    json_lines = log_format(settings, stream) == "json"
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level)
    level = max(logging.WARNING, logging.getLevelName(settings.log_level))
    logging.getLogger("cassandra").setLevel(level)
