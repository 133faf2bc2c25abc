"""Which statements the driver may send again after their answer was lost (``gateway/db/retry.py``),
and which of its errors mean "cannot answer now" (``gateway/db/session.py``).

Every statement the gateway runs is classified by its text; here the classification is held
to what the statement does, read independently: a condition (a lightweight transaction) or
an update of a table the migrations give a ``counter`` column is not idempotent, everything
else is. Then the policy is asked what it does with each kind of error.
"""

from __future__ import annotations

import re
from pathlib import Path

from cassandra import ConsistencyLevel, WriteType
from cassandra.connection import ConnectionShutdown
from cassandra.policies import RetryPolicy
from cassandra.protocol import (
    ErrorMessage,
    InvalidRequestException,
    IsBootstrappingErrorMessage,
    OverloadedErrorMessage,
    ServerError,
    SyntaxException,
)
from cassandra.query import SimpleStatement

from gateway.db.retry import GatewayRetryPolicy, all_idempotent, is_idempotent
from gateway.db.session import unavailable
from tests.support import cql_audit

CQL = Path(__file__).resolve().parents[2] / "cql"


def counter_tables() -> set[str]:
    """The tables the migrations give a ``counter`` column."""
    tables = set()
    for path in CQL.glob("*.cql"):
        for name, body in re.findall(r"CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\);", path.read_text(), re.S):
            if re.search(r"^\s*\w+ counter,?$", body, re.M):
                tables.add(name)
    return tables


def test_every_statement_is_idempotent_unless_conditional_or_a_counter_update() -> None:
    counters = counter_tables()
    assert {"room_participant_counts", "unread_email_stats"} <= counters
    statements = [found.text for found in cql_audit.collect()]
    assert len(statements) > 100
    seen = {"conditional": 0, "counter": 0, "plain": 0}
    for text in statements:
        if text.upper().startswith("BEGIN"):
            continue
        parsed = cql_audit.parse(text)
        conditional = re.search(r"\sIF (NOT )?EXISTS\b|\sIF \w+ ?(=|<|>|!=)", text) is not None
        counter = parsed.kind == "UPDATE" and parsed.table in counters
        kind = "conditional" if conditional else "counter" if counter else "plain"
        seen[kind] += 1
        assert is_idempotent(text) is (kind == "plain"), (kind, text)
    assert min(seen.values()) > 0, seen


def test_a_batch_is_idempotent_only_when_each_of_its_statements_is() -> None:
    plain = "INSERT INTO user_rooms (login, room_name, room_id, joined_at) VALUES (?, ?, ?, ?)"
    counter = "UPDATE unread_email_stats SET unread = unread + ? WHERE username = ? AND label = ?"
    claim = "INSERT INTO talk_partners (owner, row_kind) VALUES (?, 1) IF NOT EXISTS USING TTL ?"
    assert all_idempotent([plain, plain])
    assert not all_idempotent([plain, counter])
    assert not all_idempotent([claim, plain])
    assert not is_idempotent("UPDATE playlists SET songs = ? + songs WHERE id = ?")  # a list prepend
    assert is_idempotent("UPDATE talk_partners USING TIMESTAMP ? SET last_message = ? WHERE owner = ?")


def test_a_lost_answer_is_sent_again_only_for_an_idempotent_statement() -> None:
    policy = GatewayRetryPolicy()
    read = SimpleStatement("SELECT login FROM users WHERE login = ?", is_idempotent=True)
    lwt = SimpleStatement("UPDATE talk_partners SET unread = ? WHERE owner = ? IF unread = ?")
    lost = ConnectionShutdown("the node went away with the request in flight")
    failed = ServerError(0, "an unexpected error on the coordinator", None)
    for error in (lost, failed):
        assert policy.on_request_error(read, None, error, 0) == (RetryPolicy.RETRY_NEXT_HOST, None)
        assert policy.on_request_error(lwt, None, error, 0) == (RetryPolicy.RETHROW, None)
    # Not run at all: any statement may go elsewhere.
    for refusal in (OverloadedErrorMessage(0, "busy", None), IsBootstrappingErrorMessage(0, "joining", None)):
        assert policy.on_request_error(lwt, None, refusal, 0) == (RetryPolicy.RETRY_NEXT_HOST, None)


def test_an_idempotent_write_that_timed_out_is_sent_once_more_and_others_are_not() -> None:
    policy = GatewayRetryPolicy()
    plain = SimpleStatement("INSERT INTO user_rooms (login) VALUES (?)", is_idempotent=True)
    lwt = SimpleStatement("INSERT INTO users (login) VALUES (?) IF NOT EXISTS")
    quorum = ConsistencyLevel.LOCAL_QUORUM
    for write_type in (WriteType.SIMPLE, WriteType.BATCH):
        assert policy.on_write_timeout(plain, quorum, write_type, 2, 1, 0) == (
            RetryPolicy.RETRY_NEXT_HOST,
            quorum,
        )
        assert policy.on_write_timeout(plain, quorum, write_type, 2, 1, 1) == (RetryPolicy.RETHROW, None)
    for write_type in (WriteType.CAS, WriteType.SIMPLE):
        assert policy.on_write_timeout(lwt, quorum, write_type, 2, 1, 0) == (RetryPolicy.RETHROW, None)
    # The batch log's own write: retried as the driver does.
    assert policy.on_write_timeout(lwt, quorum, WriteType.BATCH_LOG, 2, 1, 0) == (RetryPolicy.RETRY, quorum)


def test_answers_that_mean_cannot_answer_now_become_unavailable_and_mistakes_do_not() -> None:
    """Among them the ones cassandra-driver 3.30 delivers as a bare error message: a
    coordinator's server error, and protocol v5's "CAS write result unknown" (0x1700)."""
    unknown_cas = ErrorMessage(
        0x1700, "CAS operation result is unknown - proposal accepted by 1 but not a quorum.", None
    )
    for error in (
        unknown_cas,
        ServerError(0x0000, "java.lang.IllegalArgumentException: Unknown CF", None),
        ConnectionShutdown("closed"),
        OverloadedErrorMessage(0x1001, "busy", None),
    ):
        assert unavailable(error), error
    for mistake in (
        InvalidRequestException(0x2200, "unconfigured table", None),
        SyntaxException(0x2000, "line 1:0", None),
        ValueError("a bug"),
    ):
        assert not unavailable(mistake), mistake
