"""Statements that carry or return large blobs, without the driver keeping them.

A finished request of the Cassandra driver (its ``ResponseFuture``) sits in
reference cycles (with its timer, its callbacks and the asyncio bridge's
closures) that keep the bound values and the rows read alive until Python's
cyclic collector reaches them, often seconds and many megabytes later: a
25 MB upload through ``Database.execute`` left most of its chunks in memory.
:func:`execute_blob` runs a prepared statement the way ``Database.execute``
does (same prepared-statement cache, statement counting and ``UNAVAILABLE``
mapping) and then empties the request's value and row lists, so a chunk is
freed as soon as its caller lets go of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from gateway.db.session import _UNAVAILABLE_ERRORS, CassandraUnavailable, Database, Row


async def execute_blob(db: Database, cql: str, params: Sequence[Any]) -> list[Row]:
    """Run one prepared statement; returns its rows (a single page)."""
    prepared = await db.prepare(cql)
    bound = prepared.bind(params)
    loop = asyncio.get_running_loop()
    done: asyncio.Future[list[Row]] = loop.create_future()
    db._count()
    try:
        response = db.session.execute_async(bound)
    except _UNAVAILABLE_ERRORS as exc:
        raise CassandraUnavailable(str(exc) or type(exc).__name__) from exc

    def resolve(rows: list[Row] | None) -> None:
        loop.call_soon_threadsafe(_settle, done, rows, None)

    def reject(exc: BaseException) -> None:
        loop.call_soon_threadsafe(_settle, done, None, exc)

    response.add_callbacks(resolve, reject)
    try:
        rows = await done
    except _UNAVAILABLE_ERRORS as exc:
        raise CassandraUnavailable(str(exc) or type(exc).__name__) from exc
    finally:
        response.clear_callbacks()
        bound.values.clear()  # the request's message shares this list
        bound.raw_values = ()
    found = list(rows or ())
    if rows:
        rows.clear()  # the finished request's result is this very list
    return found


def _settle(future: asyncio.Future[list[Row]], rows: list[Row] | None, exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(rows or [])
