"""Linking identities and syncing address books: eBuddy's User Discovery.

Two operations can discover the same connection, and the order of their
writes and reads guarantees that at least one of them does:

- ``upload_contacts`` writes the reverse index, *then* reads the owners;
- ``link_identity`` writes the claim, *then* a fan-out job, and the job's
  worker reads the reverse index page by page (``fanout.py``).

Take an upload's index row and the owner read after it. If that read starts
after the claim was acknowledged, it sees the owner. Otherwise the index row
was acknowledged before the claim, hence before the job was written, hence
before any page of the job is read: whichever worker reads the page that
holds the row sees it (each write is acknowledged at LOCAL_QUORUM before the
reads that follow it start, at LOCAL_QUORUM). The job is durable and a job
whose worker dies is continued from its last recorded page by another, so
every page is read in the end. A link that finds a job of the same identity
and owner still running writes none: that job also started after the claim,
so the same argument covers it. Both sides may see each other; recording a
discovery is idempotent and announced only by whoever records it first.

The reverse index always covers the stored books (index rows are written
before book rows and deleted after them): an index row without a book row is
harmless (linking the identity records a leftover discovery that nobody sees
and the next upload deletes), while a book row without an index row would be a
discovery missed forever.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from gateway.contacts import rules
from gateway.contacts.events import FANOUT_CHANNEL
from gateway.contacts.identity import Identity
from gateway.contacts.identity import identity_hash as hash_of
from gateway.contacts.job_store import FanoutJobs
from gateway.contacts.records import BookEntry, JobKey, LinkedIdentity
from gateway.contacts.store import ContactStore
from gateway.contacts.verifier import Verifier
from gateway.db import clock
from gateway.db.keyed_locks import KeyedLocks
from gateway.db.session import Database
from gateway.errors import BadUserInput, Conflict
from gateway.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Uploaders an unlink reads per slice of the identity's index partition.
UNLINK_PAGE = 500
#: Identities one user may link; keeps ``me.identities`` a short list and limits squatting.
MAX_IDENTITIES_PER_USER = 20

#: Serialises each user's links in this process from the count to the listing, so
#: the count a link checks cannot change under it: the cap is exact within one
#: gateway process. Across P processes linking for the same user at the same
#: instant it is soft, by at most P - 1 identities (one racer per other process);
#: an exact cross-process cap would need an LWT-guarded count written by every
#: link and unlink, more than a cap against squatting is worth.
_LINKS = KeyedLocks(wait_seconds=10.0)


@dataclass(frozen=True)
class SyncResult:
    contacts: list[BookEntry]
    discovered: list[str]


Publish = Callable[[str, object], Awaitable[None]]
#: Charges a user for identities an upload answers with their owner (the count; 0 asks
#: whether anything is left); raises RateLimited when over the limit.
ChargeLookups = Callable[[int], Awaitable[None]]


class ContactDirectory:
    """The contacts domain's operations; the GraphQL layer and the seed both call it."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.store = ContactStore(db, settings)
        self.jobs = FanoutJobs(db)
        self.pepper = settings.contacts_identity_pepper.encode()
        self.country_code = rules.country_code(settings.contacts_default_country_code)
        self.verifier = Verifier(db, settings, self.pepper)

    def identity(self, network: str, network_id: str, field: str = "networkId") -> tuple[Identity, bytes]:
        """Validated, normalised, and hashed."""
        name = rules.network(network)
        identity = Identity(name, rules.normalise(name, network_id, field, self.country_code))
        return identity, hash_of(self.pepper, identity)

    # -- requestIdentityVerification / linkIdentity / unlinkIdentity -----------

    async def request_verification(self, login: str, network: str, network_id: str) -> None:
        """Send ``login`` a one-time code for the identity (see ``verifier.py``)."""
        identity, identity_hash = self.identity(network, network_id)
        await self.verifier.request(login, identity, identity_hash)

    async def link_identity(
        self, login: str, network: str, network_id: str, code: str, publish: Publish | None = None
    ) -> LinkedIdentity:
        """Link the identity once ``code`` proves ``login`` received the code sent to it."""
        identity, identity_hash = self.identity(network, network_id)
        async with _LINKS.hold(login):
            await self._check_room_for(login, identity_hash)
            await self.verifier.check(login, identity_hash, code)
            linked = await self._claim(login, identity, identity_hash)
        await self._tell_uploaders(linked, login, publish)
        return linked

    async def link_verified(
        self, login: str, network: str, network_id: str, publish: Publish | None = None
    ) -> LinkedIdentity:
        """Link without a code: for the demo seed and benchmarks, which own their identities.
        No GraphQL operation reaches this."""
        identity, identity_hash = self.identity(network, network_id)
        async with _LINKS.hold(login):
            await self._check_room_for(login, identity_hash)
            linked = await self._claim(login, identity, identity_hash)
        await self._tell_uploaders(linked, login, publish)
        return linked

    async def _check_room_for(self, login: str, identity_hash: bytes) -> None:
        mine = await self.store.identities_of(login)
        if len(mine) >= MAX_IDENTITIES_PER_USER and all(i.identity_hash != identity_hash for i in mine):
            raise BadUserInput("networkId", f"You can link at most {MAX_IDENTITIES_PER_USER} identities.")

    async def _claim(self, login: str, identity: Identity, identity_hash: bytes) -> LinkedIdentity:
        """Claim the identity for ``login`` and list it among theirs; the caller then lets
        everyone who has it in a book discover them.

        Linking an identity you hold already is harmless and completes whatever an
        earlier link was cut short before (the identity list, the discoveries).
        """
        claim = await self.store.claim(identity_hash, identity.network, login, clock.now())
        if claim.login != login:
            raise Conflict(f"This {identity.network} identity is linked to another user.", field="networkId")
        linked = LinkedIdentity(identity.network, identity.network_id, identity_hash, claim.linked_at)
        await self.store.add_user_identity(login, linked)
        return linked

    async def unlink_identity(self, login: str, network: str, network_id: str) -> bool:
        """Release an identity ``login`` holds; False when they do not hold it.

        Order: the owner row goes first (from then on anyone may verify and link
        the identity), then the user's own row, then every uploader's book row
        that names ``login`` as the owner loses its owner and ``discoveredAt``:
        their ``Contact.user`` becomes null, without a ``contactDiscovered``
        event. Those clears are written ``USING TIMESTAMP`` of the moment before
        the owner row went, so a discovery recorded by whoever links the
        identity next (necessarily later) always wins over them.
        """
        identity, identity_hash = self.identity(network, network_id)
        released_at = clock.now_micros()
        released = await self.store.release(identity_hash, login)
        listed = any(i.identity_hash == identity_hash for i in await self.store.identities_of(login))
        if not released and not listed:
            return False
        # Listed without the owner row: an unlink cut short after the release; finish it.
        await self.store.remove_user_identity(login, identity.network, identity.network_id)

        def forget(uploader: str) -> Callable[[], Awaitable[None]]:
            async def run() -> None:
                entry = await self.store.entry(uploader, identity.network, identity_hash)
                if entry is not None and entry.owner == login:
                    await self.store.forget_discovery(uploader, identity.network, identity_hash, released_at)

            return run

        after: str | None = None
        while True:
            page = await self.store.uploaders_page(identity_hash, after=after, limit=UNLINK_PAGE)
            await self.store.limit.run_all([forget(u) for u in page if u != login])
            if len(page) < UNLINK_PAGE:
                return True
            after = page[-1]

    async def _tell_uploaders(self, linked: LinkedIdentity, owner: str, publish: Publish | None) -> None:
        """Leave the fan-out to the uploaders as a job for the workers (``fanout.py``).

        The link's response does not wait for it: the uploaders learn of the owner
        once a worker has reached them, usually within moments (the job is
        announced to the workers at once), at worst within a lease plus a poll
        interval when the worker that took it dies.
        """
        key = JobKey(linked.identity_hash, owner)
        await self.jobs.create(key, linked.network, linked.linked_at)
        if publish is not None:
            await publish(FANOUT_CHANNEL, key)

    # -- uploadContacts -----------------------------------------------------

    def parse_contacts(
        self, network: str, contacts: Sequence[rules.UploadedContact]
    ) -> tuple[str, dict[bytes, BookEntry]]:
        """Validate and normalise an upload; duplicates (the same identity written twice)
        collapse into the first occurrence, in upload order."""
        name = rules.network(network)
        parsed: dict[bytes, BookEntry] = {}
        for contact in rules.address_book(name, contacts, self.country_code):
            key = hash_of(self.pepper, Identity(name, contact.network_id))
            if key not in parsed:
                parsed[key] = BookEntry(name, key, contact.network_id, contact.name, None, None)
        return name, parsed

    async def upload_contacts(
        self,
        login: str,
        network: str,
        contacts: Sequence[rules.UploadedContact],
        charge_lookups: ChargeLookups | None = None,
    ) -> SyncResult:
        """Replace the viewer's book of ``network``; returns it with owners, and the users
        this upload discovered (owners not yet known from an earlier upload or link).

        ``charge_lookups`` pays for the identities this upload newly answers with a user
        (its book had no owner for them): asked before anything is written whether the
        user has any left, and charged before the book is written; refusing then leaves
        only index rows, which are harmless."""
        network, parsed = self.parse_contacts(network, contacts)
        lease = await self.store.acquire_upload_lease(login, network)
        if lease is None:
            raise Conflict(
                f"Another upload of your {network} contacts is in progress; retry when it has finished.",
                field="network",
            )
        try:
            return await self._holding_lease(
                login, network, lease, self._sync(login, network, parsed, charge_lookups)
            )
        finally:
            await asyncio.shield(self.store.release_upload_lease(login, network, lease))

    async def _holding_lease(
        self, login: str, network: str, lease: uuid.UUID, work: Coroutine[Any, Any, T]
    ) -> T:
        """Run ``work`` while renewing the lease three times per lease term.

        A long upload (5000 contacts queued behind others for the in-flight
        limit) can outlive one lease; the renewal (``IF upload_id = ours``)
        keeps another upload of the same book out for as long as this one
        runs. If the lease was lost anyway (this process stalled for a whole
        lease), the upload stops rather than interleave with the new holder.
        """
        task = asyncio.ensure_future(work)
        # Cassandra counts TTLs in whole seconds from the current one: a lease of
        # N seconds may end after just over N - 1.
        interval = (self.store.lease_seconds - 1) / 3
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=interval)
                if done:
                    return task.result()
                if not await self.store.renew_upload_lease(login, network, lease):
                    raise Conflict(
                        f"This upload lost its lease on your {network} contacts; upload again.",
                        field="network",
                    )
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _sync(
        self, login: str, network: str, parsed: dict[bytes, BookEntry], charge: ChargeLookups | None
    ) -> SyncResult:
        stored = {e.identity_hash: e for e in await self.store.book(login, network)}
        fresh = [h for h in parsed if h not in stored or stored[h].leftover]
        unanswered = [h for h in parsed if h not in stored or stored[h].leftover or stored[h].owner is None]
        if charge is not None and unanswered:
            await charge(0)
        await self.store.index(login, fresh)
        owners = await self.store.owners_of(list(parsed))
        now = clock.now()
        result: list[BookEntry] = []
        writes: list[BookEntry] = []
        discovered: dict[str, None] = {}
        for identity_hash, entry in parsed.items():
            before = stored.get(identity_hash)
            if before is not None and before.leftover:
                before = None
            owner = owners.get(identity_hash)
            if owner is not None and (before is None or before.owner != owner):
                entry = BookEntry(entry.network, identity_hash, entry.network_id, entry.name, owner, now)
                writes.append(entry)
                if owner != login:
                    discovered[owner] = None
            elif before is not None:
                entry = BookEntry(
                    entry.network,
                    identity_hash,
                    entry.network_id,
                    entry.name,
                    before.owner,
                    before.discovered_at,
                )
                if before.name != entry.name:
                    writes.append(entry)
            else:
                writes.append(entry)
            result.append(entry)
        removed = [h for h in stored if h not in parsed]
        answered = sum(1 for h in unanswered if owners.get(h) is not None)
        if charge is not None and answered:
            await charge(answered)
        await self.store.write_entries(login, writes)
        await self.store.remove_entries(login, network, removed)
        await self.store.unindex(login, removed)
        return SyncResult(contacts=result, discovered=list(discovered))
