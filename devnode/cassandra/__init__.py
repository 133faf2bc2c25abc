"""The local Apache Cassandra: install (fetch), configure, run (start/stop/status) the single
node, and a ring of several nodes on loopback."""

from __future__ import annotations

from devnode.cassandra.install import CASSANDRA_VERSION
from devnode.cassandra.ring import CassandraRing, parse_datacenters, ring_hosts
from devnode.cassandra.run import CassandraNode, NodeStatus

__all__ = [
    "CASSANDRA_VERSION",
    "CassandraNode",
    "CassandraRing",
    "NodeStatus",
    "parse_datacenters",
    "ring_hosts",
]
