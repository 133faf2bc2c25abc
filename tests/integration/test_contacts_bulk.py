"""A full-size upload: 5000 contacts, batched owner lookups, bounded concurrent writes."""

from __future__ import annotations

import asyncio
import math
import time
import uuid

from aiohttp import web

from gateway.contacts.service import ContactDirectory
from gateway.contacts.store import BOOK_BATCH
from gateway.db.session import IN_CHUNK
from gateway.server.app import SERVICES
from tests.conftest import ServerFactory
from tests.support.client import Api
from tests.support.contacts import UPLOAD, all_contacts, e164, fresh_phone, linked
from tests.support.webhook import CodeReceiver

UPLOAD_COUNTS = """mutation($network: String!, $contacts: [ContactInput!]!) {
  uploadContacts(network: $network, contacts: $contacts) {
    contacts { networkId user { login } }
    discovered { login }
  }
}"""


def book(size: int, owned: list[str]) -> list[dict[str, str]]:
    """``size`` distinct numbers, the ``owned`` ones spread through the list."""
    prefix = f"{uuid.uuid4().int % 10**4:04d}"
    contacts = [{"networkId": f"+1 555 {prefix} {i:04d}", "name": f"Contact {i}"} for i in range(size)]
    for n, phone in enumerate(owned):
        contacts[(n * 997) % size] = {"networkId": phone, "name": f"Owner {n}"}
    return contacts


def writes_of(size: int) -> int:
    """A fresh book: one reverse-index write per contact, one batch per BOOK_BATCH book rows."""
    return size + math.ceil(size / BOOK_BATCH)


async def test_upload_of_5000_contacts_batches_the_owner_lookups(
    api: Api, app: web.Application, codes: CodeReceiver
) -> None:
    owners = await asyncio.gather(*(api.sign_up("bulkown") for _ in range(3)))
    phones = [fresh_phone() for _ in owners]
    for owner, phone in zip(owners, phones, strict=True):
        await linked(api, codes, owner.token, "tel", phone)
    big, small = await api.sign_up("bulk"), await api.sign_up("bulksmall")

    contacts = book(5000, phones)
    started = time.perf_counter()
    large = await api.call(UPLOAD_COUNTS, {"network": "tel", "contacts": contacts}, token=big.token)
    elapsed = time.perf_counter() - started
    assert not large.errors, large.errors
    assert large.data is not None
    sync = large.data["uploadContacts"]
    assert len(sync["contacts"]) == 5000
    found = {c["networkId"]: c["user"]["login"] for c in sync["contacts"] if c["user"]}
    assert found == {e164(p): o.login for p, o in zip(phones, owners, strict=True)}
    assert sorted(u["login"] for u in sync["discovered"]) == sorted(o.login for o in owners)

    fifty = await api.call(UPLOAD_COUNTS, {"network": "tel", "contacts": book(50, phones)}, token=small.token)
    assert not fifty.errors, fifty.errors
    # Everything but the per-contact writes: the reads, the lease, the user loads.
    reads_5000 = large.statements - writes_of(5000)
    reads_50 = fifty.statements - writes_of(50)
    assert reads_5000 - reads_50 == math.ceil(5000 / IN_CHUNK) - math.ceil(50 / IN_CHUNK)
    assert reads_5000 <= 5000 // IN_CHUNK + 8

    # Syncing the unchanged book again writes nothing: only reads, still ~1 per 100 contacts.
    started_again = time.perf_counter()
    again = await api.call(UPLOAD_COUNTS, {"network": "tel", "contacts": contacts}, token=big.token)
    elapsed_again = time.perf_counter() - started_again
    assert not again.errors
    assert again.data is not None and again.data["uploadContacts"]["discovered"] == []
    assert again.statements <= 5000 // IN_CHUNK + 10

    stored = await all_contacts(api, big.token, "tel")
    assert len(stored) == 5000
    assert sum(1 for c in stored if c["user"]) == 3

    limit = app[SERVICES].store(ContactDirectory).store.limit
    assert 1 < limit.peak <= limit.limit
    print(
        f"\nuploadContacts, 5000 contacts: {elapsed:.2f} s fresh ({large.statements} statements), "
        f"{elapsed_again:.2f} s unchanged re-upload ({again.statements} statements); "
        f"peak {limit.peak} requests in flight (limit {limit.limit})"
    )


async def test_upload_writes_are_concurrent_and_bounded(make_server: ServerFactory) -> None:
    api, app = await make_server(contacts_max_in_flight=8)
    user = await api.sign_up("bounded")
    contacts = [{"networkId": fresh_phone()} for _ in range(600)]
    await api.ok(UPLOAD, {"network": "tel", "contacts": contacts}, token=user.token)
    limit = app[SERVICES].store(ContactDirectory).store.limit
    assert limit.limit == 8
    assert limit.peak == 8  # concurrent, and never more than the bound
    assert limit.in_flight == 0
