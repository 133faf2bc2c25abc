"""The canonical screens the limits test runs (``tests/support/screens.py``) are the benchmarks'
own documents, so a screen changed in ``bench/`` cannot leave the test checking an old one."""

from __future__ import annotations

import pytest

from bench import bench_blog, bench_mail, bench_messenger, bench_rooms
from tests.support import screens

SOURCES = {
    "FRONT_PAGE": bench_blog,
    "POST_PAGE": bench_blog,
    "MAILBOX": bench_mail,
    "EMAIL": bench_mail,
    "MAIN_VIEW": bench_messenger,
    "CONVERSATION": bench_messenger,
    "HISTORY": bench_rooms,
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_each_screen_is_the_benchmarks_document(name: str) -> None:
    assert getattr(screens, name) == getattr(SOURCES[name], name)
