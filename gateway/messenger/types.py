"""The messenger's object types: ``DirectMessage``, ``Conversation``, ``TalkPartner``.

Their fields read the stored records (on the plain-fields path where the list
resolver handed them what they need); ``talk_partner_node`` is ``Query.node``'s
lookup of a talk partner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from operator import attrgetter
from typing import Any, cast
from uuid import UUID

import strawberry
from strawberry.types import Info

from gateway.errors import NotFound
from gateway.graph.context import context_of
from gateway.graph.cost import text_bound
from gateway.graph.live import viewer_dependent
from gateway.graph.node import ID_DESCRIPTION, Node, global_id
from gateway.graph.pagination import (
    After,
    Before,
    Connection,
    First,
    Last,
    decode_position,
    page_request,
    position_cursor,
)
from gateway.graph.plain_fields import NOT_READ, computed_field, plain_reader, source_field
from gateway.graph.selection import selects
from gateway.messenger import rules
from gateway.messenger.loaders import partner_loader
from gateway.messenger.records import MessageRecord, PartnerRecord, conversation_id
from gateway.messenger.store import MessengerStore
from gateway.users.loaders import user_loader
from gateway.users.types import Prefetched, User, load_user, prefetched_user_field, users_by_login

MESSAGES_PAGE = 50


def _key_for(message: DirectMessage, viewer: str | None) -> str | None:
    """The sender's client key, shown to the sender only."""
    return message._record.client_message_id if viewer == message._record.sender else None


def _read_client_message_id(message: DirectMessage) -> Any:
    """The key for the viewer the page resolver named, else ``NOT_READ``."""
    viewer = message._viewer
    return NOT_READ if viewer is None else _key_for(message, viewer)


def _message_id(self: DirectMessage) -> strawberry.ID:
    record = self._record
    return global_id("DirectMessage", record.conversation_id, str(record.id))


@strawberry.type(description="A message between two users.")
class DirectMessage(Node):
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

    id: strawberry.ID = computed_field(_message_id, description=ID_DESCRIPTION)
    content: str = source_field(
        "_record.content",
        description="The text, as sent (trimmed): 1-4000 characters.",
        metadata=text_bound(rules.CONTENT_MAX),
    )
    sent_at: datetime = source_field(
        "_record.sent_at", description="When it was sent; a conversation's messages are ordered by it."
    )
    conversation_id: strawberry.ID = source_field(
        "_record.conversation_id",
        description="The two users' logins, `smaller:bigger`: the same for both of them.",
        deprecation_reason="Use `conversation { id }`: the conversation is a Node (since v3), and its "
        "global id is what `node(id:)` and a normalised cache know it by.",
    )
    sender: User | Awaitable[User] = prefetched_user_field(
        lambda m: m._record.sender, description="Who sent it."
    )
    recipient: User | Awaitable[User] = prefetched_user_field(
        lambda m: m._record.recipient, description="Who it was sent to."
    )
    client_message_id: str | Awaitable[str | None] | None = strawberry.field(
        resolver=_client_message_id,
        graphql_type=str | None,
        description="The key the sender's client sent it with (to match an optimistic update); "
        "null for anyone but the sender.",
        metadata={**plain_reader(_read_client_message_id), **viewer_dependent()},
    )

    @strawberry.field(
        description="Your conversation it belongs to, with its unread count and newest messages as they "
        "stand now: a normalised cache updates from the message alone.",
        metadata=viewer_dependent(),
    )
    async def conversation(self, info: Info) -> Conversation:
        viewer = await context_of(info).require_viewer()
        return Conversation.between(viewer, self._other(viewer))

    @strawberry.field(
        description="Your talk-partner row for the other user as it stands now (last message, unread).",
        metadata=viewer_dependent(),
    )
    async def talk_partner(self, info: Info) -> TalkPartner:
        viewer = await context_of(info).require_viewer()
        record = await context_of(info).loader(partner_loader).load((viewer, self._other(viewer)))
        return TalkPartner.of(record)

    def _other(self, viewer: str) -> str:
        record = self._record
        return record.recipient if viewer == record.sender else record.sender

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
class Conversation(Node):
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
            id=global_id("Conversation", owner, partner),
            _owner=owner,
            _partner=partner,
            _state=state,
            _users=users,
        )

    @property
    def _key(self) -> str:
        """The conversation's partitions' key: the two logins, smaller first."""
        return conversation_id(self._owner, self._partner)

    async def _unread(self, info: Info) -> PartnerRecord:
        if self._state is None:
            self._state = await context_of(info).loader(partner_loader).load((self._owner, self._partner))
        return self._state

    async def _loaded(self, info: Info, get: Callable[[PartnerRecord], Any]) -> Any:
        return get(await self._unread(info))

    id: strawberry.ID = strawberry.field(
        description=f"{ID_DESCRIPTION} Yours: the other user's view of it has another id."
    )
    with_: User | Awaitable[User] = prefetched_user_field(
        lambda c: c._partner, name="with", description="The other user."
    )
    unread_count: int | Awaitable[int] = _partner_row_field(
        "unread", int, "Messages from the other user you have not read."
    )
    unread_since: datetime | Awaitable[datetime | None] | None = _partner_row_field(
        "unread_since", datetime | None, "When the oldest unread message arrived; null when all is read."
    )
    partner_read_at: datetime | Awaitable[datetime | None] | None = _partner_row_field(
        "partner_read_at",
        datetime | None,
        "When the other user last marked the conversation read (your messages sent before it were "
        "read); null when they never have. The `conversationRead` subscription tells of each change.",
    )

    @strawberry.field(
        description="The messages of both sides, newest first. To catch up after a reconnect, ask "
        "`last: 50, before:` the cursor of the newest message you hold."
    )
    async def messages(
        self,
        info: Info,
        first: First = MESSAGES_PAGE,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[DirectMessage]:
        request = page_request(info, first, after, last, before, MESSAGES_PAGE)
        position = decode_position(request.cursor, request.cursor_field)
        page = (
            await context_of(info)
            .store(MessengerStore)
            .messages_page(self._key, size=request.size, cursor=position, backward=request.backward)
        )
        # Who is asking, once for the page, when its messages show their senders' keys.
        viewer = await context_of(info).viewer() if page.items and selects(info, "clientMessageId") else None
        users = None
        if page.items and (selects(info, "sender") or selects(info, "recipient")):
            users = await users_by_login(
                info, {login for _, r in page.items for login in (r.sender, r.recipient)}
            )
        edges = [(position_cursor(at), DirectMessage.of(record, users, viewer)) for at, record in page.items]
        return Connection.paged(request, edges, page.more, page.beyond)


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
    if last is None:
        return None
    pair = conversation_id(self._record.owner, self._record.partner)
    return global_id("DirectMessage", pair, str(last.id))


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
    partner: User | Awaitable[User] = prefetched_user_field(
        lambda p: p._record.partner, description="The other user."
    )
    last_message: str | None = computed_field(
        _last_message,
        description="The text of the latest message either of you sent; null when there is none.",
        metadata=text_bound(rules.CONTENT_MAX),
    )
    last_message_at: datetime | None = computed_field(
        _last_message_at, description="When the latest message was sent; the list is ordered by it."
    )
    last_message_id: strawberry.ID | None = computed_field(
        _last_message_id, description="The `id` of the last message (a `DirectMessage`)."
    )
    last_message_sender: User | Awaitable[User | None] | None = prefetched_user_field(
        lambda p: p._record.last_message.sender if p._record.last_message else None,
        optional=True,
        description="Who wrote the last message (you or the partner).",
    )
    unread_count: int = strawberry.field(description="Messages from the partner you have not read.")
    unread_since: datetime | None = strawberry.field(
        description="When the oldest unread message arrived; null when all is read."
    )
    conversation: Conversation = computed_field(
        _conversation, description="Your conversation with them: its messages and read state."
    )

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


@strawberry.type(description="The other user read your conversation (`markConversationRead`).")
class ReadReceipt:
    _reader: strawberry.Private[str]
    _owner: strawberry.Private[str]
    read_at: datetime = strawberry.field(
        description="When they read it: your messages sent before it were read."
    )

    @strawberry.field(description="Who read it.")
    async def by(self, info: Info) -> User:
        return await _existing_user(info, self._reader)

    @strawberry.field(
        description="Your conversation with them, as it stands now (`partnerReadAt` is `readAt`).",
        metadata=viewer_dependent(),
    )
    def conversation(self) -> Conversation:
        return Conversation.between(self._owner, self._reader)

    @classmethod
    def of_event(cls, event: dict[str, Any]) -> ReadReceipt:
        return cls(
            _reader=str(event["by"]),
            _owner=str(event["to"]),
            read_at=datetime.fromisoformat(str(event["readAt"])),
        )


@strawberry.type(description="A talk partner started or stopped typing to you.")
class TypingEvent:
    _sender: strawberry.Private[str]
    typing: bool = strawberry.field(
        description="True while they type; false when they stop, or when their client has not "
        "renewed it for a few seconds."
    )
    at: datetime = strawberry.field(description="When it started or stopped.")

    @strawberry.field(name="from", description="Who is typing.")
    async def from_(self, info: Info) -> User:
        return await _existing_user(info, self._sender)

    @classmethod
    def of_event(cls, event: dict[str, Any]) -> TypingEvent:
        return cls(
            _sender=str(event["from"]),
            typing=bool(event["typing"]),
            at=datetime.fromisoformat(str(event["at"])),
        )


async def _existing_user(info: Info, login: str) -> User:
    found = await load_user(info, login)
    if found is None:
        raise NotFound(f"No user '{login}'.")
    return found


async def talk_partner_node(info: Info, owner: str, partner: str) -> TalkPartner | None:
    """``node``'s lookup of a ``TalkPartner`` global id: only the owner's own, and
    only someone the owner has talked with."""
    if await context_of(info).viewer() != owner:
        return None
    record = await context_of(info).loader(partner_loader).load((owner, partner))
    return TalkPartner.of(record) if record.last_message is not None else None


async def conversation_node(info: Info, owner: str, partner: str) -> Conversation | None:
    """``node``'s lookup of a ``Conversation`` global id: only the owner's own, with a user
    who exists."""
    context = context_of(info)
    if await context.viewer() != owner or await context.loader(user_loader).load(partner) is None:
        return None
    return Conversation.between(owner, partner)


async def direct_message_node(info: Info, smaller: str, bigger: str, message_id: str) -> DirectMessage | None:
    """``node``'s lookup of a ``DirectMessage`` global id: only for one of the two users."""
    context = context_of(info)
    if await context.viewer() not in (smaller, bigger):
        return None
    try:
        key = UUID(message_id)
    except ValueError:
        return None
    if key.version != 1:
        return None
    record = await context.store(MessengerStore).message(conversation_id(smaller, bigger), key)
    return DirectMessage.of(record) if record is not None else None
