"""The local single-node Apache Cassandra: install (fetch), configure, run (start/stop/status)."""

from __future__ import annotations

from devnode.cassandra.install import CASSANDRA_VERSION
from devnode.cassandra.run import CassandraNode, NodeStatus

__all__ = ["CASSANDRA_VERSION", "CassandraNode", "NodeStatus"]
