"""JSON log lines: the time as ``datetime.isoformat`` writes it, to the millisecond, and
every value written, whether or not the fast encoder takes it."""

from __future__ import annotations

import io
import json
import logging
import random
from datetime import UTC, datetime
from typing import Any

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


def _lines_both_ways(
    monkeypatch: pytest.MonkeyPatch, request_id: str | None, traceparent: str | None
) -> tuple[dict[str, object], dict[str, object]]:
    """One access line written by the JSON handler from its fields (the logging set up as
    ``gateway serve`` sets it up, the record never made) and the same line made as a record
    and handled by the same handler."""
    from gateway import tracing
    from gateway.server.logs import JsonLines

    stream = io.StringIO()
    handler = JsonLines(stream)
    root, access = logging.getLogger(), observability.access_log
    saved = (root.handlers[:], root.level, access.handlers[:], access.propagate, access.level)
    root.handlers[:], access.handlers[:] = [handler], []
    access.propagate = True
    access.setLevel(logging.INFO)
    ids = tracing.request_id.set("from-context")
    parent = tracing._traceparent.set(traceparent)

    class Context:
        login = None
        websocket = True

    line = observability._Line(Context(), "subscription", None, "ok", False, 0, 0, request_id, [])
    try:
        with monkeypatch.context() as patch:

            def no_record(*args: object, **kwargs: object) -> logging.LogRecord:
                raise AssertionError("the handler writes the line without a record")

            patch.setattr(access, "makeRecord", no_record)
            line._log(0.0125)
        # Another formatter (the same lines, another class): the handler declines and the
        # record is made and formatted as logging does.
        handler.setFormatter(type("Another", (JsonFormatter,), {})())
        made = access.makeRecord
        records: list[logging.LogRecord] = []
        with monkeypatch.context() as patch:

            def counted(*args: Any, **kwargs: Any) -> logging.LogRecord:
                records.append(made(*args, **kwargs))
                return records[-1]

            patch.setattr(access, "makeRecord", counted)
            line._log(0.0125)
        assert len(records) == 1
    finally:
        tracing.request_id.reset(ids)
        tracing._traceparent.reset(parent)
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        access.handlers[:], access.propagate = saved[2], saved[3]
        access.setLevel(saved[4])
    direct, made = (json.loads(text) for text in stream.getvalue().splitlines())
    return direct, made


@pytest.mark.parametrize(
    ("request_id", "traceparent"),
    [("req-1", None), (None, None), ("req-2", "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01")],
)
def test_the_json_handler_writes_the_access_line_without_a_record_exactly_as_with_one(
    monkeypatch: pytest.MonkeyPatch, request_id: str | None, traceparent: str | None
) -> None:
    direct, made = _lines_both_ways(monkeypatch, request_id, traceparent)
    direct.pop("time"), made.pop("time")
    assert list(direct.items()) == list(made.items())  # the same keys, in the same order
    assert direct["requestId"] == (request_id or "from-context")
    assert direct.get("traceId") == (traceparent[3:35] if traceparent else None)
    assert direct["message"] == f"subscription anonymous ok 12.5ms statements=0 user=- requestId={request_id}"


def test_a_second_handler_or_a_filter_on_the_way_gets_the_record() -> None:
    from gateway.server.logs import JsonLines

    stream = io.StringIO()
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    root, access = logging.getLogger(), observability.access_log
    saved = (root.handlers[:], root.level, access.handlers[:], access.propagate, access.level)
    root.handlers[:], access.handlers[:] = [JsonLines(stream)], [Keep()]
    access.propagate = True
    access.setLevel(logging.INFO)

    class Context:
        login = "alice"
        websocket = False

    line = observability._Line(Context(), "query", "Q", "ok", False, 1, 0, "r", [])
    dropped = logging.Filter("elsewhere")  # passes no record of gateway.access
    try:
        line._log(0.001)
        access.handlers[:] = []
        access.addFilter(dropped)
        line._log(0.001)
    finally:
        access.removeFilter(dropped)
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        access.handlers[:], access.propagate = saved[2], saved[3]
        access.setLevel(saved[4])
    messages = [record.getMessage() for record in seen]
    assert messages == ["query Q ok 1.0ms statements=1 user=alice requestId=r"]
    assert len(stream.getvalue().splitlines()) == 1  # the filtered record was written by no one
