"""Every pattern check covers the whole value: ``$`` alone lets a trailing newline through.

Values that are trimmed before the check (tags, labels, colours, identities)
lose a trailing newline by design; these are the ones compared as given.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.blog import rules as blog_rules
from gateway.contacts.cursors import contact_position
from gateway.db import migrations, timeline
from gateway.errors import BadUserInput
from gateway.graph import validation
from gateway.graph.pagination import encode_cursor
from gateway.mail import rules as mail_rules
from gateway.mail.names import content_type_of
from gateway.rooms import rules as room_rules
from gateway.rooms.rules import ROOM_NAME


@pytest.mark.parametrize(("check", "good"), [(blog_rules.slug, "my-post"), (room_rules.room_name, "lobby")])
def test_a_trailing_newline_is_refused_where_the_value_is_taken_as_given(
    check: Callable[[str], str], good: str
) -> None:
    assert check(good) == good
    for value in (good + "\n", good + "\n\n"):
        with pytest.raises(BadUserInput):
            check(value)


@pytest.mark.parametrize(
    ("check", "good"),
    [(validation.login, "alice"), (lambda v: mail_rules.label(v, "label"), "work")],
)
def test_a_newline_inside_a_trimmed_value_is_refused(check: Callable[[str], str], good: str) -> None:
    assert check(good + "\n") == good
    with pytest.raises(BadUserInput):
        check(good + "\nx")


def test_is_slug_and_room_name_pattern_refuse_a_trailing_newline() -> None:
    assert blog_rules.is_slug("a-b") and not blog_rules.is_slug("a-b\n")
    assert ROOM_NAME.fullmatch("lobby") and not ROOM_NAME.fullmatch("lobby\n")
    assert mail_rules.label_or_none("x\ny") is None


def test_a_contact_cursor_hash_with_a_trailing_newline_is_refused() -> None:
    digest = "ab" * 32
    assert contact_position(encode_cursor({"n": "tel", "h": digest})) == ("tel", bytes.fromhex(digest))
    with pytest.raises(BadUserInput) as raised:
        contact_position(encode_cursor({"n": "tel", "h": digest + "\n"}))
    assert raised.value.field == "after"


def test_settings_patterns_refuse_a_trailing_newline() -> None:
    assert timeline.validate_granularity("10s") == "10s"
    with pytest.raises(ValueError):
        timeline.validate_granularity("10s\n")
    assert migrations._KEYSPACE.fullmatch("gateway") and not migrations._KEYSPACE.fullmatch("gateway\n")
    assert migrations._NAME.fullmatch("001_init.cql") and not migrations._NAME.fullmatch("001_init.cql\n")


def test_a_declared_content_type_with_a_newline_inside_is_not_trusted() -> None:
    assert content_type_of("text/plain", "a.bin") == "text/plain"
    assert content_type_of("text/plain\nx", "a.bin") == "application/octet-stream"
