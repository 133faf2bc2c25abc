"""The background fan-out of linked identities to their uploaders.

Every gateway process runs one :class:`FanoutWorker`. It takes jobs from two
sources: the nudge a ``linkIdentity`` publishes on :data:`FANOUT_CHANNEL` (so a
job starts at once, in whichever process hears it first), and, every
``GATEWAY_CONTACTS_FANOUT_POLL_SECONDS``, a look at every shard of ``contact_fanouts``
for jobs whose lease ran out (their worker died). A job is worked by the
holder of its lease only: ``GATEWAY_CONTACTS_FANOUT_BATCH`` uploaders per page, their
book rows read with ``IN`` reads of 100 and the discoveries written with at
most ``GATEWAY_CONTACTS_MAX_IN_FLIGHT`` in flight, each announced on the uploader's
``contactDiscovered`` channel; after each page the worker records the page's
last uploader and extends its lease for ``GATEWAY_CONTACTS_FANOUT_LEASE_SECONDS``. A
worker that loses its lease stops; the next holder continues from the
recorded uploader, so at most one page is done twice, and doing it twice
announces nothing twice (a row that names its owner is skipped).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from gateway.broker.pubsub import BrokerUnavailable, PubSub
from gateway.contacts.events import FANOUT_CHANNEL, Discovery, contacts_channel
from gateway.contacts.job_store import FanoutJobs
from gateway.contacts.records import SHARDS, Job, JobKey
from gateway.contacts.store import ContactStore
from gateway.db import clock
from gateway.db.session import CassandraUnavailable
from gateway.settings import Settings
from gateway.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: Jobs read from each shard per look.
SCAN_LIMIT = 20
#: Seconds before the nudges' channel is subscribed again after the broker ended it.
RESUBSCRIBE_SECONDS = 1.0


class FanoutWorker:
    def __init__(self, store: ContactStore, pubsub: PubSub, settings: Settings) -> None:
        self.store = store
        self.jobs = FanoutJobs(store.db)
        self.pubsub = pubsub
        self.id = uuid.uuid4()
        self.batch = settings.contacts_fanout_batch
        self.lease = settings.contacts_fanout_lease_seconds
        self.poll = settings.contacts_fanout_poll_seconds
        self._nudged: dict[JobKey, None] = {}
        self._wake = asyncio.Event()

    async def run(self, ready: asyncio.Event) -> None:
        """Work jobs until cancelled; starts once Cassandra is ready."""
        await ready.wait()
        listener = asyncio.create_task(self._listen())
        try:
            await self._loop()
        finally:
            await cancel_and_wait(listener, what="the fan-out listener")

    async def _listen(self) -> None:
        """Hear nudges for the life of the worker. A lost broker ends the subscription (or
        refuses it, at start): it is taken again every ``RESUBSCRIBE_SECONDS`` until the broker
        is back, and meanwhile the look every ``poll`` seconds finds the jobs."""
        while True:
            try:
                async with self.pubsub.subscribe(FANOUT_CHANNEL) as nudges:
                    await self._hear(nudges)
            except BrokerUnavailable:
                pass
            await asyncio.sleep(RESUBSCRIBE_SECONDS)

    async def _hear(self, nudges: AsyncIterator[Any]) -> None:
        async for key in nudges:
            if isinstance(key, JobKey):
                self._nudged[key] = None
                self._wake.set()

    async def _loop(self) -> None:
        while True:
            try:
                async with asyncio.timeout(self.poll):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                if self._nudged:
                    keys = list(self._nudged)
                    self._nudged.clear()
                else:
                    keys = await self._orphans()
                for key in keys:
                    await self.work(key)
            except CassandraUnavailable as exc:
                log.warning("contact fan-out paused: %s", exc)
            except Exception:
                log.exception("contact fan-out failed; retrying at the next look")

    async def _orphans(self) -> list[JobKey]:
        """Jobs of every shard whose lease has run out."""
        now = clock.now()
        shards = await asyncio.gather(*(self.jobs.waiting(shard, SCAN_LIMIT) for shard in range(SHARDS)))
        return [job.key for jobs in shards for job in jobs if job.lease_until < now]

    async def work(self, key: JobKey) -> bool:
        """Claim the job and work it to the end; False when another worker holds it
        or this worker lost the lease on the way."""
        job = await self.jobs.claim(key, self.id, self.lease)
        if job is None:
            return False
        if (await self.store.owners_of([key.identity_hash])).get(key.identity_hash) != key.owner:
            # The identity changed hands since the link: nobody is to discover this owner.
            return await self.jobs.finish(key, self.id)
        after, done = job.after_login, job.done
        while True:
            uploaders = await self.store.uploaders_page(key.identity_hash, after=after, limit=self.batch)
            await self._tell(job, [u for u in uploaders if u != key.owner])
            if len(uploaders) < self.batch:
                return await self.jobs.finish(key, self.id)
            after, done = uploaders[-1], done + len(uploaders)
            if not await self.jobs.progress(key, self.id, self.lease, after_login=after, done=done):
                return False

    async def _tell(self, job: Job, uploaders: Sequence[str]) -> None:
        """Record the owner on the book rows of ``uploaders`` that lack it, then announce.

        A row that already names its owner (an earlier, interrupted pass; an
        upload that found it) is not announced again, and a row that is gone is
        not recreated as a leftover.
        """
        key = job.key
        entries = await self.store.entries_of(uploaders, job.network, key.identity_hash)
        told = [login for login, entry in entries.items() if not entry.leftover and entry.owner is None]

        def record(login: str) -> Callable[[], Awaitable[None]]:
            return lambda: self.store.record_discovery(
                login, job.network, key.identity_hash, key.owner, job.linked_at
            )

        await self.store.limit.run_all([record(login) for login in told])
        discovery = Discovery(job.network, key.identity_hash, key.owner)
        for login in told:
            await self.pubsub.publish(contacts_channel(login), discovery)
