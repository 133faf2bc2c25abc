"""Request ids and trace context as log lines carry them (``gateway/tracing.py``,
``gateway/server/logs.py``); the requests themselves are in tests/integration/test_tracing.py."""

from __future__ import annotations

import contextvars
import io
import json
import logging

from gateway.server.logs import log_handler
from gateway.settings import Settings
from gateway.tracing import accepted_request_id, begin_request, outgoing_headers, trace_id, valid_traceparent

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_a_request_id_is_taken_as_sent_only_when_printable_and_bounded() -> None:
    for usable in ("a", "req-1/2.3_4:5~", "x" * 128, "550e8400-e29b-41d4-a716-446655440000"):
        assert accepted_request_id(usable) == usable
    made = [accepted_request_id(sent) for sent in (None, "", "x" * 129, "a b", "a\tb", "a\nb", "caf\u00e9")]
    assert all(len(rid) == 32 and int(rid, 16) >= 0 for rid in made)
    assert len(set(made)) == len(made)


def test_only_a_well_formed_traceparent_is_taken() -> None:
    assert valid_traceparent(TRACEPARENT) == TRACEPARENT
    assert valid_traceparent(f" {TRACEPARENT} ") == TRACEPARENT
    for bad in (
        None,
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        TRACEPARENT + "-extra",
    ):
        assert valid_traceparent(bad) is None, bad


def test_with_tracing_off_the_callers_trace_is_passed_on_unchanged() -> None:
    def within() -> tuple[dict[str, str], str | None]:
        begin_request("rid-1", TRACEPARENT)
        return outgoing_headers(), trace_id()

    assert contextvars.copy_context().run(within) == (
        {"traceparent": TRACEPARENT},
        "4bf92f3577b34da6a3ce929d0e0e4736",
    )
    assert (
        contextvars.copy_context().run(lambda: (begin_request("rid-2", "junk"), outgoing_headers())[1]) == {}
    )
    assert outgoing_headers() == {} and trace_id() is None


def _lines(log_format: str) -> list[str]:
    stream = io.StringIO()
    logger = logging.getLogger(f"gateway.test.request_ids.{log_format}")
    handler = log_handler(Settings(log_format=log_format), stream)
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:

        def within_a_request() -> None:
            begin_request("rid-7", TRACEPARENT)
            logger.warning("inside %s", "the request")
            logger.info("own id", extra={"requestId": "given"})

        contextvars.copy_context().run(within_a_request)
        logger.warning("outside")
    finally:
        logger.removeHandler(handler)
    return stream.getvalue().splitlines()


def test_every_line_logged_within_a_request_carries_its_id_and_trace() -> None:
    inside, given, outside = (json.loads(line) for line in _lines("json"))
    assert (inside["message"], inside["requestId"], inside["traceId"]) == (
        "inside the request",
        "rid-7",
        "4bf92f3577b34da6a3ce929d0e0e4736",
    )
    assert given["requestId"] == "given"
    assert "requestId" not in outside and "traceId" not in outside and "request" not in outside


def test_a_text_line_shows_the_request_id_after_the_logger() -> None:
    inside, _, outside = _lines("text")
    assert inside.endswith("WARNING gateway.test.request_ids.text [rid-7]: inside the request")
    assert outside.endswith("WARNING gateway.test.request_ids.text: outside")
