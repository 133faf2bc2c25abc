"""The switches that turn the gateway's fast paths off, back to the libraries' own.

``CASSANDRA_DIRECT_READS=0``: every statement takes the driver's full path (its effect on a
connected gateway is in ``tests/integration/test_loop_io.py``). ``GATEWAY_PLAIN_FIELDS=0``: graphql-core's
reference executor (as Strawberry runs it) answers every field, and every operation runs through
Strawberry's own ``execute`` (no known-documents lane). Both are on by default.
"""

from __future__ import annotations

from typing import Any

from gateway.graph.plain_fields import PlainFieldsExecutor
from gateway.schema import build_schema
from gateway.settings import Settings


def test_the_fast_paths_are_on_unless_switched_off() -> None:
    defaults = Settings.from_env({})
    assert defaults.direct_reads and defaults.plain_fields
    off = Settings.from_env({"CASSANDRA_DIRECT_READS": "0", "GATEWAY_PLAIN_FIELDS": "0"})
    assert not off.direct_reads and not off.plain_fields


def test_plain_fields_off_is_the_reference_executor() -> None:
    assert build_schema(Settings()).execution_context_class is PlainFieldsExecutor
    reference = build_schema(Settings(plain_fields=False)).execution_context_class
    assert reference is not None and not issubclass(reference, PlainFieldsExecutor)
    # An explicit argument wins over the setting (the differential test builds both).
    assert build_schema(Settings(plain_fields=False), plain_fields=True).execution_context_class is (
        PlainFieldsExecutor
    )


def test_plain_fields_off_runs_strawberrys_own_execute() -> None:
    lane: Any = build_schema(Settings())
    reference: Any = build_schema(Settings(plain_fields=False))
    assert lane._known_limit > 0
    assert reference._known_limit == 0
