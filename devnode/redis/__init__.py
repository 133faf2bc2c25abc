"""The local Redis server (Debian's ``redis-server``): install, run (start/stop/status), and a
local Redis Cluster of three masters for the sharded broker."""

from __future__ import annotations

from devnode.redis.cluster import ClusterStatus, LocalRedisCluster
from devnode.redis.run import RedisServer, RedisStatus

__all__ = ["ClusterStatus", "LocalRedisCluster", "RedisServer", "RedisStatus"]
