"""Which statements the driver may send again, and when.

When the connection a statement went out on fails before its answer comes (its node was
killed, the network cut), or the node answers with an unexpected server error, the statement
may or may not have been applied. cassandra-driver's default ``RetryPolicy`` then sends it to
the next host whatever it is: harmless for a read or a plain write (the same values under the
same client timestamp), wrong for the rest. A lightweight transaction sent again finds its own
write and answers "not applied": the unread count that was raised is raised again, a join
that applied is taken for a member already there and not counted, a leave for no member, a
sign-up for a taken login. A counter update sent again counts twice.

So every prepared statement carries ``is_idempotent`` (:func:`is_idempotent`, set when it is
prepared), and :class:`GatewayRetryPolicy` sends a statement whose answer was lost to the next
host only when it is idempotent; otherwise the caller gets the error (``CassandraUnavailable``,
``UNAVAILABLE`` to the client, with ``retrySafe`` as its idempotency key says), and the
services that can settle an unknown outcome do so (``gateway.db.lwt.retry_unknown_outcome``).
Errors that say the node did not run the statement (overloaded, bootstrapping, too few
replicas alive) are retried on the next host as before, whatever the statement.

A write the coordinator timed out on (too few replicas acknowledged in time) is sent once more,
to the next host, when it is idempotent: a node that was just killed or is starting again
makes a few such timeouts, and a plain write (a message with its bucket and talk-partner rows,
a folder listing) can simply be written again rather than leave the client not knowing. The
driver's default retries only the batch log's own write.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from cassandra.policies import RetryPolicy
from cassandra.protocol import IsBootstrappingErrorMessage, OverloadedErrorMessage

#: A condition: ``IF [NOT] EXISTS`` or ``IF <column> ...`` (a lightweight transaction).
_CONDITIONAL = re.compile(r"\bIF\b", re.IGNORECASE)
#: A column set from itself: a counter moved (``c = c + ?``), a list appended or prepended to.
_SELF_REFERENCE = re.compile(r"\b(\w+)\s*=\s*(?:\1\s*[-+]|[^,=]*?\+\s*\1\b)", re.IGNORECASE)
_SELECT = re.compile(r"^\s*SELECT\s", re.IGNORECASE)

#: Errors meaning the node did not run the statement: any statement may go to the next host.
_NOT_RUN = (OverloadedErrorMessage, IsBootstrappingErrorMessage)


def is_idempotent(cql: str) -> bool:
    """True when running ``cql`` twice with the same values (and client timestamp) leaves what
    running it once does: a read, or a plain write. Not a lightweight transaction (its outcome
    depends on what it finds) nor a counter update or list append (each run adds again)."""
    if _SELECT.match(cql):
        return True
    return not (_CONDITIONAL.search(cql) or _SELF_REFERENCE.search(cql))


def all_idempotent(statements: Iterable[str]) -> bool:
    """A batch is idempotent when every statement in it is."""
    return all(is_idempotent(cql) for cql in statements)


class GatewayRetryPolicy(RetryPolicy):  # type: ignore[misc]  # the driver is untyped
    """The driver's default retry policy, except for statements whose answer was lost (only an
    idempotent one is sent to the next host) and idempotent writes that timed out (sent once
    more, to the next host)."""

    def on_write_timeout(
        self,
        query: Any,
        consistency: Any,
        write_type: Any,
        required_responses: int,
        received_responses: int,
        retry_num: int,
    ) -> tuple[int, Any]:
        if retry_num == 0 and getattr(query, "is_idempotent", False):
            return self.RETRY_NEXT_HOST, consistency
        decision: tuple[int, Any] = super().on_write_timeout(
            query, consistency, write_type, required_responses, received_responses, retry_num
        )
        return decision

    def on_request_error(
        self, query: Any, consistency: Any, error: BaseException, retry_num: int
    ) -> tuple[int, Any]:
        if isinstance(error, _NOT_RUN) or getattr(query, "is_idempotent", False):
            return self.RETRY_NEXT_HOST, None
        return self.RETHROW, None
