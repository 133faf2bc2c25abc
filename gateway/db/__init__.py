"""The Cassandra side: nothing of GraphQL, HTTP or the broker is known here.

``session.py`` holds the process's one cluster and session: statements prepared
once, rows as dicts, the driver bridged to asyncio, statements counted per
request. On the served gateway the driver's sockets live on the event loop
(``loop_io.py``, ``segments.py``) and reads take a short way to a connection
(``direct.py``). Beside them, what every domain's stores share: bucketed
timelines (``timeline.py``), bounded compare-and-set loops (``lwt.py``),
idempotency keys (``idempotency.py``), timeuuids and UTC (``clock.py``),
per-key locks and in-flight limits, and the migrations of ``cql/``.
"""
