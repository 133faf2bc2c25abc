"""Settings of the local development tooling: the embedded Cassandra node (or ring) and Redis.

Only ``devnode`` and the commands, tests and benchmarks that start those servers read them;
the running gateway's :class:`~gateway.settings.Settings` knows nothing of where a local node
keeps its files or how much heap it has. Declared like every other setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gateway.settings.declare import (
    PORT,
    Bounds,
    computed_setting,
    problems,
    raise_problems,
    read_env,
    setting,
    values_of,
)
from gateway.settings.values import heap_size_problem

__all__ = ["ToolingSettings"]

TOOLING = "Local tooling (the embedded node and Redis)"


def _default_cassandra_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cassandra-gateway"


@dataclass(frozen=True)
class ToolingSettings:
    cassandra_home: Path = computed_setting(
        "GATEWAY_CASSANDRA_HOME",
        _default_cassandra_home,
        "where the embedded node's jars, data and logs live (and the local ring's and Redis's files)",
        group=TOOLING,
        default_text="`$XDG_CACHE_HOME/cassandra-gateway` (`~/.cache/...`)",
    )
    cassandra_heap: str = setting(
        "GATEWAY_CASSANDRA_HEAP", "1G", "heap of the embedded node", group=TOOLING, check=heap_size_problem
    )
    cassandra_ring_heap: str = setting(
        "GATEWAY_CASSANDRA_RING_HEAP",
        "320M",
        "heap of each node of the local ring (`gateway cassandra start --nodes 3`)",
        group=TOOLING,
        check=heap_size_problem,
    )
    redis_port: int = setting(
        "GATEWAY_REDIS_PORT",
        6390,
        "port of the local Redis server of `gateway redis start` (on 127.0.0.1; files in "
        "`<GATEWAY_CASSANDRA_HOME>/redis-<port>/`)",
        group=TOOLING,
        bounds=PORT,
    )
    redis_cluster_port: int = setting(
        "GATEWAY_REDIS_CLUSTER_PORT",
        6391,
        "first port of the local Redis Cluster of `gateway redis start --cluster` (three masters "
        "on this port and the next two, their cluster bus 10000 above; files in "
        "`<GATEWAY_CASSANDRA_HOME>/redis-cluster-<port>/`)",
        group=TOOLING,
        bounds=Bounds("a port number up to 55533 (its bus port is 10000 above)", minimum=1, maximum=55533),
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ToolingSettings:
        values, sources = read_env(cls, environ)
        raise_problems(problems(cls, values, sources))
        return cls(**values)

    def validate(self) -> ToolingSettings:
        raise_problems(problems(ToolingSettings, values_of(self)))
        return self
