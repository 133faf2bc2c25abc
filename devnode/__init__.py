"""Development tooling: fetch, start and stop the local Apache Cassandra node and Redis server.

Used by the ``gateway cassandra|redis`` commands, the tests and the benchmarks; the running
gateway never imports it (it talks to whatever Cassandra and Redis it is configured for).
Everything lives in one per-user cache directory (``ToolingSettings.cassandra_home``,
``GATEWAY_CASSANDRA_HOME``).
"""
