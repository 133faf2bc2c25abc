"""Messenger: talk partners, conversations, direct messages; send, mark read, live delivery."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import datetime
from operator import attrgetter
from typing import Annotated, Any, cast

import strawberry
from strawberry.types import Info

from gateway.errors import NotFound
from gateway.graph.context import Context, context_of
from gateway.graph.cost import text_bound
from gateway.graph.node import ID_DESCRIPTION, Node, global_id
from gateway.graph.pagination import Connection, Edge, PageInfo, decode_position, page_size, position_cursor
from gateway.graph.plain_fields import NOT_READ, computed_field, plain_reader, source_field
from gateway.graph.selection import selects
from gateway.messenger import rules
from gateway.messenger.cursors import edges_by_recency, spot_cursor, spot_position
from gateway.messenger.events import message_events
from gateway.messenger.loaders import partner_loader
from gateway.messenger.model import MessageRecord, PartnerRecord, conversation_id
from gateway.messenger.service import MessengerService
from gateway.messenger.store import MessengerStore
from gateway.ratelimit.policy import Limit
from gateway.users.loaders import user_loader
from gateway.users.types import Prefetched, User, prefetched_user_field, users_by_login

MESSAGES_PAGE = 50
TALK_PARTNERS_PAGE = 50


def service(context: Context) -> MessengerService:
    return MessengerService(context.store(MessengerStore), context.pubsub)


WithArgument = Annotated[str, strawberry.argument(name="with", description="The other user's login.")]


def _key_for(message: DirectMessage, viewer: str | None) -> str | None:
    """The sender's client key, shown to the sender only."""
    return message._record.client_message_id if viewer == message._record.sender else None


def _read_client_message_id(message: DirectMessage) -> Any:
    """The key for the viewer the page resolver named, else ``NOT_READ``."""
    viewer = message._viewer
    return NOT_READ if viewer is None else _key_for(message, viewer)


@strawberry.type(description="A message between two users.")
class DirectMessage:
    """Fields are read from the stored message when the query selects them (a page
    of 50 made every id and moment before, selected or not).

    The user fields return the prefetched user, or an awaitable that graphql-core
    awaits, and ``clientMessageId`` the value for the viewer the page resolver passed,
    or an awaitable that asks for the viewer: a page needs no awaitable per message.
    They are declared as annotated fields to keep the schema's field order."""

    _record: strawberry.Private[MessageRecord]
    #: Users prefetched by the page resolver; None: not prefetched.
    _users: strawberry.Private[Prefetched] = None
    #: Who is asking, when the page resolver knows; None: not known here.
    _viewer: strawberry.Private[str | None] = None

    def _client_message_id(self, info: Info) -> str | Awaitable[str | None] | None:
        known = _read_client_message_id(self)
        if known is not NOT_READ:
            return cast(str | None, known)
        return self._client_message_id_for_viewer(info)

    async def _client_message_id_for_viewer(self, info: Info) -> str | None:
        return _key_for(self, await context_of(info).viewer())

    id: strawberry.ID = source_field("_record.id", str)
    content: str = source_field("_record.content", metadata=text_bound(rules.CONTENT_MAX))
    sent_at: datetime = source_field("_record.sent_at")
    conversation_id: strawberry.ID = source_field(
        "_record.conversation_id", description="The conversation it belongs to (`smaller:bigger` login)."
    )
    sender: User | Awaitable[User] = prefetched_user_field(lambda m: m._record.sender)
    recipient: User | Awaitable[User] = prefetched_user_field(lambda m: m._record.recipient)
    client_message_id: str | Awaitable[str | None] | None = strawberry.field(
        resolver=_client_message_id,
        graphql_type=str | None,
        description="The key the sender's client sent it with (to match an optimistic update); "
        "null for anyone but the sender.",
        metadata=plain_reader(_read_client_message_id),
    )

    @classmethod
    def of(cls, record: MessageRecord, users: Prefetched = None, viewer: str | None = None) -> DirectMessage:
        return cls(_record=record, _users=users, _viewer=viewer)


def _partner_row_field(attribute: str, graphql_type: Any, description: str) -> Any:
    """A field of the owner's talk-partner row: from the row a talk partners page handed
    the conversation (on the plain-fields path), else loaded."""
    get = attrgetter(attribute)

    def read(conversation: Any) -> Any:
        state = conversation._state
        return NOT_READ if state is None else get(state)

    def resolve(self: Any, info: Info) -> Any:
        known = read(self)
        return self._loaded(info, get) if known is NOT_READ else known

    return strawberry.field(
        resolver=resolve, graphql_type=graphql_type, description=description, metadata=plain_reader(read)
    )


@strawberry.type(description="Your conversation with one other user.")
class Conversation:
    """Reached from a talk partner, it holds the partner's row and users the list
    loaded: its fields answer on the plain-fields path. Reached alone, they load."""

    _owner: strawberry.Private[str]
    _partner: strawberry.Private[str]
    #: The owner's talk-partner row when the caller already has it (talkPartners).
    _state: strawberry.Private[PartnerRecord | None] = None
    #: Users prefetched by a talk partners list; None: not prefetched.
    _users: strawberry.Private[Prefetched] = None

    @classmethod
    def between(
        cls, owner: str, partner: str, state: PartnerRecord | None = None, users: Prefetched = None
    ) -> Conversation:
        return cls(
            id=strawberry.ID(conversation_id(owner, partner)),
            _owner=owner,
            _partner=partner,
            _state=state,
            _users=users,
        )

    async def _unread(self, info: Info) -> PartnerRecord:
        if self._state is None:
            self._state = await context_of(info).loader(partner_loader).load((self._owner, self._partner))
        return self._state

    async def _loaded(self, info: Info, get: Callable[[PartnerRecord], Any]) -> Any:
        return get(await self._unread(info))

    id: strawberry.ID = strawberry.field(description="`smaller:bigger` of the two logins.")
    with_: User | Awaitable[User] = prefetched_user_field(
        lambda c: c._partner, name="with", description="The other user."
    )
    unread_count: int | Awaitable[int] = _partner_row_field(
        "unread", int, "Messages from the other user you have not read."
    )
    unread_since: datetime | Awaitable[datetime | None] | None = _partner_row_field(
        "unread_since", datetime | None, "When the oldest unread message arrived; null when all is read."
    )

    @strawberry.field(description="Newest first.")
    async def messages(
        self, info: Info, first: int | None = MESSAGES_PAGE, after: str | None = None
    ) -> Connection[DirectMessage]:
        size = page_size(info, first, MESSAGES_PAGE)
        position = decode_position(after)
        page = (
            await context_of(info)
            .store(MessengerStore)
            .messages_page(str(self.id), first=size, after=position)
        )
        # Who is asking, once for the page, when its messages show their senders' keys.
        viewer = await context_of(info).viewer() if page.items and selects(info, "clientMessageId") else None
        users = None
        if page.items and (selects(info, "sender") or selects(info, "recipient")):
            users = await users_by_login(
                info, {login for _, r in page.items for login in (r.sender, r.recipient)}
            )
        return Connection.of(
            [(position_cursor(at), DirectMessage.of(record, users, viewer)) for at, record in page.items],
            page.has_next,
        )


def _talk_partner_id(self: TalkPartner) -> strawberry.ID:
    return global_id("TalkPartner", self._record.owner, self._record.partner)


def _last_message(self: TalkPartner) -> str | None:
    last = self._record.last_message
    return last.content if last else None


def _last_message_at(self: TalkPartner) -> datetime | None:
    last = self._record.last_message
    return last.sent_at if last else None


def _last_message_id(self: TalkPartner) -> strawberry.ID | None:
    last = self._record.last_message
    return strawberry.ID(str(last.id)) if last else None


def _conversation(self: TalkPartner) -> Conversation:
    return Conversation.between(self._record.owner, self._record.partner, self._record, self._users)


@strawberry.type(description="Someone you have talked with, with the conversation's latest state.")
class TalkPartner(Node):
    """Fields are read from the stored row when the query selects them (a page of 50
    built every id, conversation and message id before, selected or not); they resolve
    on the plain-fields path."""

    _record: strawberry.Private[PartnerRecord]
    #: Users prefetched by the list resolver; None: not prefetched.
    _users: strawberry.Private[Prefetched]

    id: strawberry.ID = computed_field(_talk_partner_id, description=ID_DESCRIPTION)
    partner: User | Awaitable[User] = prefetched_user_field(lambda p: p._record.partner)
    last_message: str | None = computed_field(_last_message, metadata=text_bound(rules.CONTENT_MAX))
    last_message_at: datetime | None = computed_field(_last_message_at)
    last_message_id: strawberry.ID | None = computed_field(_last_message_id)
    last_message_sender: User | Awaitable[User | None] | None = prefetched_user_field(
        lambda p: p._record.last_message.sender if p._record.last_message else None,
        optional=True,
        description="Who wrote the last message (you or the partner).",
    )
    unread_count: int = strawberry.field(description="Messages from the partner you have not read.")
    unread_since: datetime | None = strawberry.field(
        description="When the oldest unread message arrived; null when all is read."
    )
    conversation: Conversation = computed_field(_conversation)

    @classmethod
    def of(cls, record: PartnerRecord, users: Prefetched = None) -> TalkPartner:
        return cls(_record=record, _users=users, unread_count=record.unread, unread_since=record.unread_since)

    @classmethod
    async def list_of(cls, info: Info, records: list[PartnerRecord]) -> list[TalkPartner]:
        """Talk partners of a list, with the users the query selects loaded in one
        batch for the whole list."""
        logins: set[str] = set()
        if selects(info, "partner") or selects(info, "with"):  # the user, or its conversation's
            logins.update(r.partner for r in records)
        if selects(info, "lastMessageSender"):
            logins.update(r.last_message.sender for r in records if r.last_message)
        users = await users_by_login(info, logins) if logins else None
        return [cls.of(record, users) for record in records]


async def talk_partner_node(info: Info, owner: str, partner: str) -> TalkPartner | None:
    """``node``'s lookup of a ``TalkPartner`` global id: only the owner's own, and
    only someone the owner has talked with."""
    if await context_of(info).viewer() != owner:
        return None
    record = await context_of(info).loader(partner_loader).load((owner, partner))
    return TalkPartner.of(record) if record.last_message is not None else None


async def _other_user(info: Info, viewer: str, login: str, field: str) -> str:
    """``login`` validated: well-formed, not the viewer, an existing user."""
    other = rules.other_login(login, viewer, field)
    # Both users in one read; the response's sender/recipient fields reuse it.
    found = await context_of(info).loader(user_loader).load_many([viewer, other])
    if found[1] is None:
        raise NotFound(f"No user '{other}'.", field=field)
    return other


@strawberry.type
class MessengerMe:
    login: strawberry.Private[str]

    @strawberry.field(
        description="Everyone you have talked with, most recent conversation first. Someone who "
        "writes to you while you page moves to the top: a fresh first page shows them, later pages "
        "never repeat them."
    )
    async def talk_partners(
        self, info: Info, first: int | None = TALK_PARTNERS_PAGE, after: str | None = None
    ) -> Connection[TalkPartner]:
        size = page_size(info, first, TALK_PARTNERS_PAGE)
        page = (
            await context_of(info)
            .store(MessengerStore)
            .partners_page(self.login, first=size, after=spot_position(after))
        )
        edges = edges_by_recency(page)
        nodes = await TalkPartner.list_of(info, [record for _, record in edges])
        return Connection(
            edges=[Edge(cursor=cursor, node=node) for (cursor, _), node in zip(edges, nodes, strict=True)],
            page_info=PageInfo(
                has_next_page=page.has_next,
                end_cursor=spot_cursor(page.end) if page.end else None,
                start_cursor=edges[0][0] if edges else None,
            ),
        )

    @strawberry.field(description="Your conversation with `with` (empty when you never talked).")
    async def conversation(self, info: Info, with_: WithArgument) -> Conversation:
        partner = await _other_user(info, self.login, with_, "with")
        return Conversation.between(self.login, partner)


@strawberry.type
class MessengerMutation:
    @strawberry.mutation(
        description="Send a direct message. The same (sender, clientMessageId) sent again within "
        "3 days stores one message and returns it each time."
    )
    async def send_message(
        self, info: Info, to: str, content: str, client_message_id: str | None = None
    ) -> DirectMessage:
        context = context_of(info)
        key = context.idempotency_key(info, client_message_id, "clientMessageId")
        sender = await context.require_viewer()
        text = rules.content(content)
        await context.rate_limit(Limit.SEND, sender)
        recipient = await _other_user(info, sender, to, "to")
        sent = await service(context).send(sender, recipient, text, key)
        return DirectMessage.of(sent.message)

    @strawberry.mutation(
        description="Everything unread from `with` becomes read; a message arriving at the same "
        "moment is counted afterwards, never lost. Select `conversation { id unreadCount }` too, "
        "and a normalised cache updates the talk partner and the conversation together."
    )
    async def mark_conversation_read(self, info: Info, with_: WithArgument) -> TalkPartner:
        context = context_of(info)
        viewer = await context.require_viewer()
        partner = await _other_user(info, viewer, with_, "with")
        record = await service(context).mark_read(viewer, partner)
        return TalkPartner.of(record)


@strawberry.type
class MessengerSubscription:
    @strawberry.subscription(
        description="Every direct message to or from you, on every open connection of yours."
    )
    async def message_received(self, info: Info) -> AsyncGenerator[DirectMessage, None]:
        context = context_of(info)
        login = await context.require_viewer()
        async with message_events(context.pubsub, login) as messages:
            async for message in messages:
                context.fresh()
                yield DirectMessage.of(message)
