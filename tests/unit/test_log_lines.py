"""JSON log lines: the time as ``datetime.isoformat`` writes it, to the millisecond, and
every value written, whether or not the fast encoder takes it."""

from __future__ import annotations

import io
import json
import logging
import random
from datetime import UTC, datetime

import pytest

from gateway.graph import observability
from gateway.server.logs import JsonFormatter, RequestContext


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord("gateway.test", logging.INFO, __file__, 1, "hello %s", ("é",), None)
    for key, value in extra.items():
        setattr(record, key, value)
    return record


@pytest.mark.parametrize(
    "created",
    [1_700_000_000.0, 1_700_000_000.9999996, 1_700_000_000.0009996, 1_700_000_002.0005, 1_700_000_059.999]
    + [1_700_000_000 + random.Random(7).random() * 86_400 for _ in range(40)],
)
def test_the_time_is_what_isoformat_writes(created: float) -> None:
    record = _record()
    record.created = created
    line = json.loads(JsonFormatter().format(record))
    assert line["time"] == datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")


def test_one_formatter_writes_the_time_of_each_record_whatever_came_before() -> None:
    formatter = JsonFormatter()
    for created in (1_700_000_005.5, 1_700_000_001.25, 1_700_000_005.001, 1_700_000_001.999):
        record = _record()
        record.created = created
        expected = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
        assert json.loads(formatter.format(record))["time"] == expected


def test_values_the_fast_encoder_refuses_are_written_all_the_same() -> None:
    line = json.loads(
        JsonFormatter().format(_record(big=2**70, thing=object(), when=datetime(2026, 1, 2, tzinfo=UTC)))
    )
    assert line["message"] == "hello é"
    assert line["big"] == 2**70
    assert line["thing"].startswith("<object object")
    assert line["when"].startswith("2026-01-02")


def test_the_access_line_carries_the_operations_fields() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestContext())
    access = observability.access_log
    saved = (access.handlers[:], access.propagate, access.level)
    access.handlers[:] = [handler]
    access.propagate = False
    access.setLevel(logging.INFO)
    try:

        class Context:
            login = "alice"
            websocket = False

        observability._Line(Context(), "query", "Conv", "ok", False, 4, 1, "req-1", []).record(
            _Quiet(), 0.0032
        )
    finally:
        access.handlers[:], access.propagate = saved[0], saved[1]
        access.setLevel(saved[2])
    written = json.loads(stream.getvalue())
    assert written["logger"] == "gateway.access"
    assert written["message"] == "query Conv ok 3.2ms statements=4 user=alice requestId=req-1"
    assert {k: written[k] for k in ("requestId", "operation", "operationType", "transport", "user")} == {
        "requestId": "req-1",
        "operation": "Conv",
        "operationType": "query",
        "transport": "http",
        "user": "alice",
    }
    assert (written["durationMs"], written["statements"], written["lwtRetries"], written["outcome"]) == (
        3.2,
        4,
        1,
        "ok",
    )


class _Quiet:
    def operation_answered(self, *args: object) -> None:
        pass

    def subscription_started(self, *args: object) -> None:
        pass

    def subscription_ended(self, *args: object) -> None:
        pass

    def count_rate_limited(self, rule: str) -> None:
        pass
