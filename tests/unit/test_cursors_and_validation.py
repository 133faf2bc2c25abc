"""Opaque cursors and input validation: every bad value is BAD_USER_INPUT naming its field."""

from __future__ import annotations

import base64
import json
from uuid import uuid4

import pytest

from gateway.db import clock
from gateway.db.timeline import Position
from gateway.errors import BadUserInput
from gateway.graph import validation
from gateway.graph.node import global_id, parse_global_id
from gateway.graph.pagination import decode_cursor, decode_position, encode_cursor, position_cursor


def test_position_cursors_round_trip_and_are_url_safe() -> None:
    position = Position(bucket=20261123, item_id=clock.new_timeuuid())
    cursor = position_cursor(position)
    assert len(cursor) == 32
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=")
    assert decode_position(cursor) == position
    assert decode_position(cursor.rstrip("=")) == position
    assert decode_position(None) is None


def test_position_cursors_and_global_ids_are_the_base64_they_always_were() -> None:
    for n in range(2000):
        item = clock.new_timeuuid()
        position = Position(bucket=n * 10_007, item_id=item)
        packed = (n * 10_007).to_bytes(8, "big") + item.bytes
        assert position_cursor(position) == base64.urlsafe_b64encode(packed).decode()
        parts = ("DirectMessage", f"user{n}:user{n + 1}", str(item))
        assert global_id(*parts) == base64.b64encode(":".join(parts).encode()).decode()
        assert parse_global_id(global_id(*parts)) == (parts[0], ":".join(parts[1:]))


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not base64 at all!",
        "é",
        base64.urlsafe_b64encode(b"short").decode(),
        # A random (version 4) uuid: Cassandra compares timeuuids only with timeuuids.
        base64.urlsafe_b64encode(b"\x00" * 8 + uuid4().bytes).decode(),
    ],
)
def test_bad_position_cursors_name_the_field(cursor: str) -> None:
    with pytest.raises(BadUserInput) as raised:
        decode_position(cursor, field="after")
    assert raised.value.field == "after"


def test_json_cursors_round_trip() -> None:
    payload = {"n": "room-1", "o": 3}
    assert decode_cursor(encode_cursor(payload)) == payload
    assert decode_cursor(None) is None


def test_json_cursors_are_the_compact_sorted_json_issued_before() -> None:
    """Cursors already in clients' hands stay valid and equal: the same bytes as
    ``json.dumps(..., separators=(",", ":"), sort_keys=True)`` for the ASCII values they hold."""
    payload = {"n": "room-1", "i": str(uuid4()), "a": 3, "h": "ab" * 32}
    written = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    assert encode_cursor(payload) == base64.urlsafe_b64encode(written).decode().rstrip("=")


@pytest.mark.parametrize("cursor", ["%%%", base64.urlsafe_b64encode(b"[1, 2]").decode(), "bnVsbA"])
def test_bad_json_cursors_name_the_field(cursor: str) -> None:
    with pytest.raises(BadUserInput) as raised:
        decode_cursor(cursor, field="after")
    assert raised.value.field == "after"


def test_text_is_trimmed_and_bounded() -> None:
    assert validation.text("  hi  ", "content", max_len=5) == "hi"
    with pytest.raises(BadUserInput) as empty:
        validation.text("   ", "content", max_len=5)
    assert empty.value.field == "content"
    with pytest.raises(BadUserInput) as long:
        validation.text("x" * 6, "content", max_len=5)
    assert long.value.field == "content"
    assert validation.optional_text(None, "bio", max_len=3) is None
    assert validation.optional_text("", "bio", max_len=3) == ""


@pytest.mark.parametrize("value", ["Alice", "  bob_1 ", "a.b-c", "x" * 30, "0zz"])
def test_logins_are_lower_cased(value: str) -> None:
    assert validation.login(value) == value.strip().lower()


@pytest.mark.parametrize("value", ["ab", "x" * 31, "_alice", "al ice", "al\nice", "ålice", ""])
def test_bad_logins_name_the_field(value: str) -> None:
    with pytest.raises(BadUserInput) as raised:
        validation.login(value, field="to")
    assert raised.value.field == "to"


@pytest.mark.parametrize("value", ["a@example.org", " A.B+c@mail.example.co.uk "])
def test_emails(value: str) -> None:
    assert validation.email(value) == value.strip()


@pytest.mark.parametrize(
    "value", ["a@b", "@example.org", "a b@example.org", "a@-x.org", "a@" + "x" * 250 + ".org"]
)
def test_bad_emails_name_the_field(value: str) -> None:
    with pytest.raises(BadUserInput) as raised:
        validation.email(value)
    assert raised.value.field == "email"


def test_patterns_match_the_whole_value() -> None:
    import re

    room = re.compile(r"[a-z]{3,5}")
    assert validation.pattern("abc", "name", room, "is wrong.") == "abc"
    for value in ("abc\n", "abcdef", "ab", " abc"):
        with pytest.raises(BadUserInput) as raised:
            validation.pattern(value, "name", room, "is wrong.")
        assert raised.value.field == "name"
