"""Reads sent straight to a connection on the event loop (``CASSANDRA_IO=loop``).

The driver dresses every statement in a ``ResponseFuture``: an execution
profile looked up, a client timestamp taken under a lock, a ``threading.Event``
with its condition and lock, a request timer, the callback lists, then the
query plan and the connection: a large share of a statement's cost on the
gateway's loop (``bench/NOTES.md``). :class:`DirectReads` sends a prepared SELECT the short
way: the load-balancing policy's first host that has a free stream (token-aware
as before), an ``EXECUTE`` message with the profile's consistency and page
size, and a callback that turns the rows into dicts with the profile's row
factory, on the loop that awaits them.

Only SELECTs take this way: reading again is harmless, so anything but rows
(an error answer from the node, a connection that failed) hands the read to
the driver's full path, which applies its retry policy, prepares again a
statement the node forgot, and raises what the caller would have seen. No
write is ever sent twice by this module. A read not answered within the
request timeout fails with ``OperationTimedOut`` as the driver's would, and
its stream id is left orphaned the way the driver leaves it, so a late answer
can never be taken for another request's.

The driver's pools, streams and messages are reached through
:mod:`gateway.db.driver_internals`; ``CASSANDRA_DIRECT_READS=0`` turns this module off.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from cassandra import OperationTimedOut
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Session
from cassandra.query import FETCH_SIZE_UNSET, BoundStatement

from gateway.db.driver_internals import (
    RESULT_KIND_ROWS,
    ExecuteMessage,
    ResultMessage,
    borrow_stream,
    connection_pools,
    give_back_unsent_stream,
    orphan_stream,
    return_stream,
)

Rows = tuple[list[dict[str, Any]], bytes | None]

#: Seconds to wait for a free stream id on a connection (the driver's own choice).
BORROW_TIMEOUT = 2.0


def is_read(cql: str) -> bool:
    return cql.lstrip()[:6].upper() == "SELECT"


class DirectReads:
    """The short way for the reads of one session, whose connections serve ``loop``."""

    def __init__(self, session: Session, loop: asyncio.AbstractEventLoop, loop_thread: int) -> None:
        profile = session.get_execution_profile(EXEC_PROFILE_DEFAULT)
        self.loop = loop
        self.loop_thread = loop_thread
        self._session = session
        self._policy = profile.load_balancing_policy
        self._consistency = profile.consistency_level
        self._serial_consistency = profile.serial_consistency_level
        self._row_factory = profile.row_factory
        self._timeout = profile.request_timeout
        self._fetch_size = session.default_fetch_size
        handler = session.client_protocol_handler
        self._encode = handler.encode_message
        self._decode = handler.decode_message

    def send(self, bound: BoundStatement, paging_state: bytes | None) -> asyncio.Future[Rows | None] | None:
        """Send ``bound`` on the first host of its query plan with a free stream. The future
        gets the rows and the paging state, None when the read should take the driver's full
        path after all, or ``OperationTimedOut``. None: no connection took it now."""
        pools = connection_pools(self._session)
        for host in self._policy.make_query_plan(None, bound):
            pool = pools.get(host)
            if pool is None or pool.is_shutdown:
                continue
            try:
                connection, request_id = borrow_stream(pool, BORROW_TIMEOUT)
            except Exception:  # the driver moves on to the next host alike
                continue
            break
        else:
            return None
        prepared = bound.prepared_statement
        fetch_size = bound.fetch_size
        # Positional, as the driver sends it (keywords cost more): the fence checks the order.
        message = ExecuteMessage(
            prepared.query_id,
            bound.values,
            self._consistency,
            self._serial_consistency,
            self._fetch_size if fetch_size is FETCH_SIZE_UNSET else fetch_size,
            paging_state,
            None,
            skip_meta=bool(prepared.result_metadata),
            result_metadata_id=prepared.result_metadata_id,
        )
        loop = self.loop
        future: asyncio.Future[Rows | None] = loop.create_future()
        timer = loop.call_later(self._timeout, self._timed_out, future, pool, connection, request_id)
        settle = self._settler(future, timer, pool, connection)

        def answered(response: Any) -> None:
            # The loop reads the answers; a connection that fails may call from a driver thread.
            if threading.get_ident() == self.loop_thread:
                settle(response)
            else:
                try:
                    loop.call_soon_threadsafe(settle, response)
                except RuntimeError:  # the loop is closed: nobody awaits the answer
                    return_stream(pool, connection)

        try:
            connection.send_msg(
                message,
                request_id,
                cb=answered,
                encoder=self._encode,
                decoder=self._decode,
                result_metadata=prepared.result_metadata,
            )
        except Exception:  # closed or overloaded: the full path picks another
            timer.cancel()
            # Nothing went out on the stream: it is free again (the driver's path would keep it).
            give_back_unsent_stream(pool, connection, request_id)
            return None
        return future

    def _settler(
        self, future: asyncio.Future[Rows | None], timer: asyncio.TimerHandle, pool: Any, connection: Any
    ) -> Callable[[Any], None]:
        row_factory = self._row_factory

        def settle(response: Any) -> None:
            timer.cancel()
            return_stream(pool, connection)
            if future.done():  # cancelled by its caller, or ended by a shutdown
                return
            if isinstance(response, ResultMessage) and response.kind == RESULT_KIND_ROWS:
                rows = row_factory(response.column_names, response.parsed_rows)
                future.set_result((rows, response.paging_state))
            else:  # an error answer, or the connection's failure
                future.set_result(None)

        return settle

    @staticmethod
    def _timed_out(future: asyncio.Future[Rows | None], pool: Any, connection: Any, request_id: int) -> None:
        """The driver's ``ResponseFuture._on_timeout``: the stream id stays taken until the late
        answer comes (the connection then frees it), so no other request can receive it.
        Unless the connection failed first: it hands the request its error (settle returns it)."""
        orphan_stream(pool, connection, request_id)
        if not future.done():
            error = OperationTimedOut(f"Client request timeout: no answer from {connection.endpoint}")
            future.set_exception(error)
