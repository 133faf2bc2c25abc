"""The local Redis server (Debian's ``redis-server``): install, run (start/stop/status)."""

from __future__ import annotations

from devnode.redis.run import RedisServer, RedisStatus

__all__ = ["RedisServer", "RedisStatus"]
