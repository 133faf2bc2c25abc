"""Where a verification code goes without a webhook: the log of the development node, nowhere else."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from gateway.contacts.webhook import CodeSender
from gateway.errors import Unavailable

EXPIRES = datetime(2030, 1, 1, tzinfo=UTC)


async def test_the_development_node_writes_the_code_to_the_log(caplog: pytest.LogCaptureFixture) -> None:
    sender = CodeSender("", timeout=1.0, attempts=1, log_codes=True)
    with caplog.at_level(logging.WARNING, logger="gateway.contacts.webhook"):
        await sender.send("tel", "+31612345678", "123456", EXPIRES)
    assert any("123456" in record.getMessage() for record in caplog.records)


async def test_off_the_development_node_a_code_is_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    sender = CodeSender("", timeout=1.0, attempts=1, log_codes=False)
    with caplog.at_level(logging.DEBUG), pytest.raises(Unavailable) as refused:
        await sender.send("tel", "+31612345678", "654321", EXPIRES)
    assert refused.value.retry_safe
    assert "GATEWAY_VERIFICATION_WEBHOOK_URL" in refused.value.message
    assert not any("654321" in record.getMessage() for record in caplog.records)
