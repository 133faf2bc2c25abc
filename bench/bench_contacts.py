"""Contacts: a 5000-contact upload and the contacts page, beside the same CQL on the driver.

- ``uploadContacts`` of a fresh 5000-contact book (a new user each time), and of
  an unchanged book (the periodic re-sync of a phone: reads only);
- ``me.contacts(first: 50)`` with every contact's user resolved.

The driver baselines issue the statements the operation cannot do without (index
writes, owner lookups 100 at a time, book rows in single-partition batches, with
the same in-flight bound), without GraphQL, validation, the upload lease or the
book diff. Run: ``.venv/bin/python -m bench.bench_contacts``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from bench.harness import Target, counted, gateway_under_test, report, side_by_side
from gateway.contacts.service import ContactDirectory
from gateway.contacts.store import BOOK_BATCH
from gateway.db.session import chunked
from gateway.users.store import UserStore

BOOK_SIZE = 5000
UPLOADS = 12
UPLOAD_CONCURRENCY = 2
PAGES = 1000
PAGE_CONCURRENCY = 32
OWNERS = 50

UPLOAD = """mutation($network: String!, $contacts: [ContactInput!]!) {
  uploadContacts(network: $network, contacts: $contacts) {
    contacts { networkId name user { login } } discovered { login }
  }
}"""
PAGE = "{ me { contacts(first: 50) { edges { cursor node { networkId name user { login firstname } } } } } }"


def book(seed: int, owned: list[str]) -> list[dict[str, str]]:
    """5000 numbers of their own (one country-code block per seed), with the owned ones mixed in."""
    contacts = [
        {"networkId": f"+1 {200 + seed:03d} {i:07d}", "name": f"Contact {seed}-{i}"} for i in range(BOOK_SIZE)
    ]
    for n, phone in enumerate(owned):
        contacts[n * (BOOK_SIZE // len(owned))] = {"networkId": phone, "name": f"Owner {n}"}
    return contacts


async def main() -> None:
    async with gateway_under_test() as target:
        tag = uuid.uuid4().hex[:6]
        owners = [f"own{tag}{n}" for n in range(OWNERS)]
        owner_phones = [f"+44 79 {n:08d}" for n in range(OWNERS)]
        directory = ContactDirectory(target.db, target.settings)
        for login, phone in zip(owners, owner_phones, strict=True):
            await target.sign_up(login)
            # The owners' numbers are the benchmark's own: linked without a verification code.
            await directory.link_verified(login, "tel", phone)
        uploaders = [await target.sign_up(f"up{tag}{n}") for n in range(UPLOADS + 1)]
        books = [book(n, owner_phones) for n in range(UPLOADS + 1)]
        raw = RawContacts(target, directory)

        rows = [
            *await side_by_side(
                (
                    f"gateway: uploadContacts, fresh {BOOK_SIZE}",
                    lambda i: target.graphql(
                        UPLOAD, {"network": "tel", "contacts": books[i + 1]}, uploaders[i + 1]
                    ),
                ),
                (
                    f"driver:  index + lookups + book, {BOOK_SIZE}",
                    lambda i: counted(raw.upload(f"raw{i}", books[i + 1])),
                ),
                requests=UPLOADS,
                concurrency=UPLOAD_CONCURRENCY,
                warmup=1,
            ),
            *await side_by_side(
                (
                    f"gateway: uploadContacts, unchanged {BOOK_SIZE}",
                    lambda i: target.graphql(
                        UPLOAD, {"network": "tel", "contacts": books[i + 1]}, uploaders[i + 1]
                    ),
                ),
                (
                    f"driver:  book read + lookups, {BOOK_SIZE}",
                    lambda i: counted(raw.resync(f"raw{i}", books[i + 1])),
                ),
                requests=UPLOADS,
                concurrency=UPLOAD_CONCURRENCY,
                warmup=1,
            ),
        ]
        reader = await target.sign_up(f"reader{tag}")
        reader_book = [{"networkId": p, "name": f"Owner {n}"} for n, p in enumerate(owner_phones)]
        reader_book += [{"networkId": f"+1 199 {n:07d}", "name": f"Other {n}"} for n in range(50)]
        await target.graphql(UPLOAD, {"network": "tel", "contacts": reader_book}, reader)
        rows += [
            *await side_by_side(
                (
                    "gateway: me.contacts(first: 50) with users",
                    lambda _: target.graphql(PAGE, token=reader),
                ),
                (
                    "driver:  session + page + users IN",
                    lambda _: counted(raw.page(reader)),
                ),
                requests=PAGES,
                concurrency=PAGE_CONCURRENCY,
            ),
        ]
        report(
            f"contacts ({BOOK_SIZE}-contact uploads x{UPLOADS} at concurrency {UPLOAD_CONCURRENCY}; "
            f"pages x{PAGES} at concurrency {PAGE_CONCURRENCY}; "
            f"in-flight limit {target.settings.contacts_max_in_flight} per process)",
            rows,
        )
        for row in rows[:4]:
            print(f"{row.name:<44} {row.rps * BOOK_SIZE:>9.0f} contacts/s")


class RawContacts:
    """The same operations as plain prepared statements (the baseline)."""

    def __init__(self, target: Target, directory: ContactDirectory) -> None:
        self.db = target.db
        self.directory = directory
        self.limit = directory.store.limit
        self.users = UserStore(target.db, target.settings)
        self.pepper = target.settings.contacts_identity_pepper.encode()

    def _hashes(self, contacts: list[dict[str, str]]) -> list[tuple[bytes, str, str]]:
        out = []
        for c in contacts:
            identity, digest = self.directory.identity("tel", c["networkId"])
            out.append((digest, identity.network_id, c["name"]))
        return out

    async def _lookups(self, digests: list[bytes]) -> None:
        await self.limit.run_all(
            [
                _bind(
                    self.db.execute,
                    "SELECT identity_hash, login FROM identity_owners WHERE identity_hash IN ?",
                    (list(chunk),),
                )
                for chunk in chunked(digests)
            ]
        )

    async def upload(self, login: str, contacts: list[dict[str, str]]) -> None:
        entries = self._hashes(contacts)
        await self.limit.run_all(
            [
                _bind(
                    self.db.execute,
                    "INSERT INTO contact_index (identity_hash, login) VALUES (?, ?)",
                    (d, login),
                )
                for d, _, _ in entries
            ]
        )
        await self._lookups([d for d, _, _ in entries])
        insert = (
            "INSERT INTO contact_books (login, network, identity_hash, network_id, name)"
            " VALUES (?, ?, ?, ?, ?)"
        )
        await self.limit.run_all(
            [
                _bind_batch(self.db.batch, [(insert, (login, "tel", d, n, name)) for d, n, name in group])
                for group in chunked(entries, BOOK_BATCH)
            ]
        )

    async def resync(self, login: str, contacts: list[dict[str, str]]) -> None:
        await self.db.execute_all(
            "SELECT identity_hash, name, owner FROM contact_books WHERE login = ? AND network = 'tel'",
            (login,),
            fetch_size=5000,
        )
        await self._lookups([d for d, _, _ in self._hashes(contacts)])

    async def page(self, token: str) -> None:
        from gateway.users.store import SessionStore

        login = await SessionStore(self.db, self.directory.store.settings).login_of(token)
        assert login is not None
        result = await self.db.execute(
            "SELECT network, identity_hash, network_id, name, owner FROM contact_books"
            " WHERE login = ? LIMIT 51",
            (login,),
        )
        await self.users.get_many(r["owner"] for r in result.rows if r["owner"])


def _bind(execute: Callable[..., Awaitable[Any]], cql: str, params: Any) -> Callable[[], Awaitable[Any]]:
    return lambda: execute(cql, params)


def _bind_batch(batch: Callable[..., Awaitable[Any]], statements: Any) -> Callable[[], Awaitable[Any]]:
    return lambda: batch(statements, logged=False)


if __name__ == "__main__":
    asyncio.run(main())
