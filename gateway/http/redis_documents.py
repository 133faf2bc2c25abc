"""Persisted-query documents in the Redis broker, so a hash registered on one process
is known on every other.

A document is immutable under its hash, so each process also keeps the documents it
has seen in a small local LRU and asks Redis only on a local miss. In Redis each
document is one string key, ``<namespace>:apq:<sha256>``, with a TTL that every read
reaching Redis renews (``GETEX``): documents no client asks for any more vanish, and Redis's own
memory limit bounds the rest. A document over ``max_document_bytes`` is not stored
(the client keeps sending its text, which always works).

With Redis unreachable, a lookup misses (the client retries with the full query, as
after any eviction) and a registration is kept only locally: persisted queries
degrade to full queries, they never fail a request.
"""

from __future__ import annotations

import logging

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from gateway.http.persisted import LruDocumentStore

log = logging.getLogger(__name__)

#: How long a document nobody asks for stays in Redis.
TTL_SECONDS = 7 * 86400
#: The largest document stored in Redis (one operation of a client build is far below).
MAX_DOCUMENT_BYTES = 256 * 1024
#: Documents each process keeps in front of Redis.
LOCAL_DOCUMENTS = 1000


class RedisDocumentStore:
    def __init__(
        self,
        client: aioredis.Redis | aioredis.RedisCluster,
        *,
        namespace: str,
        ttl_seconds: int = TTL_SECONDS,
        max_document_bytes: int = MAX_DOCUMENT_BYTES,
        local: LruDocumentStore | None = None,
    ) -> None:
        self._client = client
        self._prefix = f"{namespace}:apq:"
        self.ttl_seconds = ttl_seconds
        self.max_document_bytes = max_document_bytes
        self.local = local or LruDocumentStore(LOCAL_DOCUMENTS, LOCAL_DOCUMENTS * 64 * 1024)

    async def get(self, sha256: str) -> str | None:
        document = await self.local.get(sha256)
        if document is not None:
            return document
        try:
            raw = await self._client.getex(self._prefix + sha256, ex=self.ttl_seconds)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("persisted query looked up locally only: broker unreachable (%s)", exc)
            return None
        if raw is None:
            return None
        document = raw.decode() if isinstance(raw, bytes) else str(raw)
        await self.local.put(sha256, document)
        return document

    async def put(self, sha256: str, document: str) -> None:
        await self.local.put(sha256, document)
        data = document.encode()
        if len(data) > self.max_document_bytes:
            return
        try:
            await self._client.set(self._prefix + sha256, data, ex=self.ttl_seconds)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("persisted query registered locally only: broker unreachable (%s)", exc)
