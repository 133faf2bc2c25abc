"""Contacts: identities, address-book sync and discovery (types, mutations, subscription)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from gateway.contacts import rules
from gateway.contacts.cursors import contact_cursor, contact_position
from gateway.contacts.events import Discovery, contacts_channel
from gateway.contacts.records import BookEntry, LinkedIdentity
from gateway.contacts.rules import MAX_CONTACTS_PER_UPLOAD, UploadedContact
from gateway.contacts.service import MAX_IDENTITIES_PER_USER, ContactDirectory
from gateway.errors import BadUserInput
from gateway.graph.context import context_of
from gateway.graph.cost import max_items
from gateway.graph.node import global_id
from gateway.graph.pagination import After, Connection, First, page_size
from gateway.graph.selection import selects
from gateway.ratelimit.policy import Limit
from gateway.users.types import User, load_users, users_by_login

#: The identity named by a mutation's arguments.
Network = Annotated[
    str,
    strawberry.argument(
        description="The network: `tel` (a phone number), `email` or `fb` (a Facebook user id), in any case."
    ),
]
NetworkId = Annotated[
    str,
    strawberry.argument(
        description="The id on that network: a phone number in any common notation (normalised to E.164; "
        "a national one gets the gateway's country code), an email address, or a numeric Facebook id. "
        "BAD_USER_INPUT when it is none of these."
    ),
]
NETWORK_DESCRIPTION = "`tel`, `email` or `fb`."


@strawberry.type(
    description="An identity of yours on a network: a phone number, an email address, a Facebook id."
)
class Identity:
    id: strawberry.ID = strawberry.field(description="Unique among all identities: the network and its id.")
    network: str = strawberry.field(description=NETWORK_DESCRIPTION)
    network_id: str = strawberry.field(description="Normalised: phone numbers in E.164, emails lower-case.")
    linked_at: datetime = strawberry.field(description="When you proved it yours (linkIdentity).")

    @classmethod
    def of(cls, linked: LinkedIdentity) -> Identity:
        return cls(
            id=global_id("Identity", linked.network, linked.network_id),
            network=linked.network,
            network_id=linked.network_id,
            linked_at=linked.linked_at,
        )


@strawberry.type(description="An entry of your uploaded address book.")
class Contact:
    """Every field, ``user`` included, is filled at construction (see :meth:`list_of`):
    plain attributes resolve on Strawberry's fast path."""

    id: strawberry.ID = strawberry.field(description="Unique among all address books: it includes yours.")
    network: str = strawberry.field(description=NETWORK_DESCRIPTION)
    network_id: str = strawberry.field(description="Normalised: phone numbers in E.164, emails lower-case.")
    name: str | None = strawberry.field(description="Your name for the contact, as uploaded; null when none.")
    discovered_at: datetime | None = strawberry.field(
        description="When the owner of this identity became known to you; null until then."
    )
    user: User | None = strawberry.field(
        description="The registered user who owns this identity, once known."
    )

    @classmethod
    def of(cls, book: str, entry: BookEntry, users: Mapping[str, User]) -> Contact:
        """``entry`` of ``book``'s (a login's) address book."""
        assert entry.network_id is not None
        return cls(
            id=global_id("Contact", book, entry.network, entry.network_id),
            network=entry.network,
            network_id=entry.network_id,
            name=entry.name,
            discovered_at=entry.discovered_at,
            user=users.get(entry.owner) if entry.owner is not None else None,
        )

    @classmethod
    async def list_of(cls, info: Info, book: str, entries: list[BookEntry]) -> list[Contact]:
        """Contacts with their owners, loaded in one batch when the query selects ``user``
        (left null otherwise, as nothing reads them)."""
        users: Mapping[str, User] = {}
        if selects(info, "user"):
            users = await users_by_login(info, (e.owner for e in entries if e.owner is not None))
        return [cls.of(book, entry, users) for entry in entries]


@strawberry.type(description="The outcome of an address-book upload.")
class ContactSync:
    contacts: list[Contact] = strawberry.field(
        description="The uploaded contacts, normalised, duplicates merged, in upload order.",
        metadata=max_items(MAX_CONTACTS_PER_UPLOAD),
    )
    _discovered: strawberry.Private[list[str]]

    @strawberry.field(
        description="Users this upload discovered: owners you did not know about before.",
        metadata=max_items(MAX_CONTACTS_PER_UPLOAD),
    )
    async def discovered(self, info: Info) -> list[User]:
        return await load_users(info, self._discovered)


@strawberry.input(description="One address-book entry: the id on the upload's network, and your name for it.")
class ContactInput:
    network_id: str = strawberry.field(
        description="The contact's id on the upload's network: a phone number in any common notation, an "
        "email address, or a numeric Facebook id. BAD_USER_INPUT on `contacts[i].networkId` when it is none."
    )
    name: str | None = strawberry.field(
        default=None, description="1-100 characters after trimming; null when none."
    )


@strawberry.type
class ContactsMe:
    login: strawberry.Private[str]

    @strawberry.field(
        description="The identities you linked, by network.", metadata=max_items(MAX_IDENTITIES_PER_USER)
    )
    async def identities(self, info: Info) -> list[Identity]:
        directory = context_of(info).store(ContactDirectory)
        return [Identity.of(i) for i in await directory.store.identities_of(self.login)]

    @strawberry.field(
        description="Your uploaded address books: by network, then in a stable order (not by name). "
        "`network` restricts the list to one network."
    )
    async def contacts(
        self,
        info: Info,
        first: First = 50,
        after: After = None,
        network: Annotated[
            str | None, strawberry.argument(description="Only this network's book: `tel`, `email` or `fb`.")
        ] = None,
    ) -> Connection[Contact]:
        size = page_size(info, first, 50)
        only = rules.network(network) if network is not None else None
        position = contact_position(after)
        if only is not None and position is not None and position[0] != only:
            raise BadUserInput("after", "This cursor belongs to another network.")
        directory = context_of(info).store(ContactDirectory)
        entries, has_next = await directory.store.page(self.login, network=only, after=position, limit=size)
        contacts = await Contact.list_of(info, self.login, entries)
        return Connection.of(
            [(contact_cursor(e), c) for e, c in zip(entries, contacts, strict=True)], has_next
        )


@strawberry.type
class ContactsMutation:
    @strawberry.mutation(
        description="Send a one-time code to an identity (by the operator's SMS or email sender) to "
        "prove it is yours with linkIdentity. 6 digits, single use, valid 10 minutes; a new request "
        "replaces the pending code. RATE_LIMITED when asked too often or after too many wrong codes."
    )
    async def request_identity_verification(
        self, info: Info, network: Network, network_id: NetworkId
    ) -> bool:
        context = context_of(info)
        login = await context.require_viewer()
        await context.rate_limit(Limit.VERIFICATION_REQUEST, login)
        await context.store(ContactDirectory).request_verification(login, network, network_id)
        return True

    @strawberry.mutation(
        description="Claim an identity as yours with the code requestIdentityVerification sent to it. "
        "A wrong or expired code is BAD_USER_INPUT on `code`; repeated wrong codes are RATE_LIMITED. "
        "CONFLICT if another user holds it; linking it again is harmless. Everyone who has it in an "
        "uploaded address book discovers you."
    )
    async def link_identity(
        self,
        info: Info,
        network: Network,
        network_id: NetworkId,
        code: Annotated[
            str,
            strawberry.argument(description="The 6 digits requestIdentityVerification sent to the identity."),
        ],
    ) -> Identity:
        context = context_of(info)
        login = await context.require_viewer()
        directory = context.store(ContactDirectory)
        # Each code burns after a few wrong guesses (verifier.py); this bucket bounds a
        # user's wrong guesses across all identities.
        await context.rate_limit(Limit.WRONG_CODE, login, cost=0)
        try:
            linked = await directory.link_identity(
                login, network, network_id, code, publish=context.pubsub.publish
            )
        except BadUserInput as exc:
            if exc.field == "code":
                await context.rate_limit(Limit.WRONG_CODE, login)
            raise
        return Identity.of(linked)

    @strawberry.mutation(
        description="Release an identity you linked; false if you do not hold it. Address books that "
        "had found you through it show that contact without a user again (no event is sent)."
    )
    async def unlink_identity(self, info: Info, network: Network, network_id: NetworkId) -> bool:
        context = context_of(info)
        login = await context.require_viewer()
        return await context.store(ContactDirectory).unlink_identity(login, network, network_id)

    @strawberry.mutation(
        description="Replace your address book of one network (at most 5000 contacts; an empty list clears "
        "it). Returns the contacts with their users where known, and the users newly discovered."
    )
    async def upload_contacts(
        self,
        info: Info,
        network: Network,
        contacts: Annotated[
            list[ContactInput],
            strawberry.argument(description="The whole book: it replaces the one you had for `network`."),
        ],
    ) -> ContactSync:
        context = context_of(info)
        login = await context.require_viewer()
        directory = context.store(ContactDirectory)
        await context.rate_limit(Limit.UPLOAD, login)

        async def charge_lookups(count: int) -> None:
            await context.rate_limit(Limit.IDENTITY_LOOKUP, login, count)

        result = await directory.upload_contacts(
            login, network, [UploadedContact(c.network_id, c.name) for c in contacts], charge_lookups
        )
        synced = await Contact.list_of(info, login, result.contacts)
        return ContactSync(contacts=synced, _discovered=result.discovered)


@strawberry.type
class ContactsSubscription:
    @strawberry.subscription(
        description="A contact of yours just became a known user (linked that identity)."
    )
    async def contact_discovered(self, info: Info) -> AsyncGenerator[Contact, None]:
        context = context_of(info)
        login = await context.require_viewer()
        directory = context.store(ContactDirectory)
        async with context.pubsub.subscribe(contacts_channel(login)) as messages:
            async for message in messages:
                if not isinstance(message, Discovery):
                    continue
                context.fresh()
                entry = await directory.store.entry(login, message.network, message.identity_hash)
                if entry is None or entry.leftover or entry.owner is None:
                    continue
                [contact] = await Contact.list_of(info, login, [entry])
                yield contact
