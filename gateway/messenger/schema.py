"""The messenger's root fields: ``Me.talkPartners`` and ``Me.conversation``, sending,
marking read and typing, and the ``messageReceived``, ``conversationRead`` and ``typing``
subscriptions.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from functools import partial
from typing import Annotated, Any
from uuid import UUID

import strawberry
from strawberry.types import Info

from gateway.db.timeline import REPLAY_MAX, Seam
from gateway.errors import NotFound
from gateway.graph.context import Context, context_of
from gateway.graph.live import Verdict
from gateway.graph.pagination import After, Before, Connection, First, Flag, Last, page_request, resume_point
from gateway.messenger import rules
from gateway.messenger.cursors import mark_cursor, mark_position
from gateway.messenger.events import receipts_channel, typing_channel, user_messages_channel
from gateway.messenger.records import MessageRecord, event_users
from gateway.messenger.service import MessengerService
from gateway.messenger.store import MessengerStore
from gateway.messenger.types import Conversation, DirectMessage, ReadReceipt, TalkPartner, TypingEvent
from gateway.messenger.typing import TypingExpiry
from gateway.ratelimit.policy import Limit
from gateway.users.loaders import user_loader
from gateway.users.records import UserProfile
from gateway.users.types import User

TALK_PARTNERS_PAGE = 50


def service(context: Context) -> MessengerService:
    return MessengerService(context.store(MessengerStore), context.pubsub)


WithArgument = Annotated[
    str,
    strawberry.argument(
        name="with",
        description="The other user's login, in any case; BAD_USER_INPUT when it is your own.",
    ),
]


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
        self,
        info: Info,
        first: First = TALK_PARTNERS_PAGE,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[TalkPartner]:
        request = page_request(info, first, after, last, before, TALK_PARTNERS_PAGE)
        cursor = mark_position(request.cursor, request.cursor_field)
        store = context_of(info).store(MessengerStore)
        page = await store.partners_page(
            self.login, size=request.size, cursor=cursor, backward=request.backward
        )
        items = page.items[::-1] if request.backward else page.items
        nodes = await TalkPartner.list_of(info, [record for _, record in items])
        edges = [(mark_cursor(mark), node) for (mark, _), node in zip(items, nodes, strict=True)]
        beyond: Flag = False
        if cursor is not None:
            edge = (items[-1] if request.backward else items[0])[0] if items else cursor
            login, backward = self.login, not request.backward

            async def probe() -> bool:
                return (await store.partners_page(login, size=0, cursor=edge, backward=backward)).more

            beyond = probe
        return Connection.paged(request, edges, page.more, beyond)

    @strawberry.field(
        description="Your conversation with `with` (empty when you never talked). NOT_FOUND when there "
        "is no such user."
    )
    async def conversation(self, info: Info, with_: WithArgument) -> Conversation:
        partner = await _other_user(info, self.login, with_, "with")
        return Conversation.between(self.login, partner)


@strawberry.type
class MessengerMutation:
    @strawberry.mutation(
        description="Send a direct message: it reaches both sides' `messageReceived`, and moves the "
        "conversation to the top of both talk-partner lists. The same (sender, clientMessageId) sent "
        "again within 3 days stores one message and returns it each time. Rate limited."
    )
    async def send_message(
        self,
        info: Info,
        to: Annotated[
            str,
            strawberry.argument(
                description="The recipient's login, in any case. BAD_USER_INPUT when it is yours, "
                "NOT_FOUND when there is no such user."
            ),
        ],
        content: Annotated[str, strawberry.argument(description="1-4000 characters after trimming.")],
        client_message_id: Annotated[
            str | None,
            strawberry.argument(
                description="An idempotency key you generate (a UUID; at most 100 characters): a retry "
                "after a lost answer stores nothing twice and returns the first message, which carries "
                "it back in `clientMessageId`, to match an optimistic update."
            ),
        ] = None,
    ) -> DirectMessage:
        context = context_of(info)
        key = context.idempotency_key(info, client_message_id, "clientMessageId")
        sender = await context.require_viewer()
        text = rules.content(content)
        await context.rate_limit(Limit.SEND, sender)
        recipient = await _other_user(info, sender, to, "to")
        # Read with the recipient's check (one statement for both): the event carries them.
        users = await context.loader(user_loader).load_many([sender, recipient])
        profiles = [UserProfile.of(user) for user in users if user is not None]
        sent = await service(context).send(sender, recipient, text, key, profiles)
        return DirectMessage.of(sent.message)

    @strawberry.mutation(
        description="Everything unread from `with` becomes read; a message arriving at the same "
        "moment is counted afterwards, never lost. Select `conversation { id unreadCount }` too, "
        "and a normalised cache updates the talk partner and the conversation together. The other "
        "user's `conversationRead` hears of it. NOT_FOUND when there is no such user."
    )
    async def mark_conversation_read(self, info: Info, with_: WithArgument) -> TalkPartner:
        context = context_of(info)
        viewer = await context.require_viewer()
        partner = await _other_user(info, viewer, with_, "with")
        record = await service(context).mark_read(viewer, partner)
        return TalkPartner.of(record)

    @strawberry.mutation(
        description="Tell `with` you are typing to them (`typing: false`: you stopped). Never stored; "
        "it lapses by itself a few seconds after the last `typing: true` (6 unless the gateway is set "
        "otherwise), so send it again every 2 or 3 seconds while the user types. Only a talk partner "
        "hears it; true either way. Rate limited."
    )
    async def set_typing(
        self,
        info: Info,
        with_: WithArgument,
        typing: Annotated[
            bool, strawberry.argument(description="true: you are typing (renew it); false: you stopped.")
        ] = True,
    ) -> bool:
        context = context_of(info)
        viewer = await context.require_viewer()
        other = rules.other_login(with_, viewer, "with")
        await context.rate_limit(Limit.TYPING, viewer)
        await service(context).set_typing(viewer, other, typing)
        return True


@strawberry.type
class MessengerSubscription:
    @strawberry.subscription(
        description="Every direct message to or from you, on every open connection of yours. With "
        "`after`, first every message of any of your conversations stored after that one, oldest "
        "first, then live: no gap and no repeat at the seam."
    )
    async def message_received(
        self,
        info: Info,
        after: Annotated[
            str | None,
            strawberry.argument(
                description="A message you hold: its `id`, or the cursor of its edge in any "
                f"conversation. At most {REPLAY_MAX} messages are replayed; past that, "
                "`BAD_USER_INPUT` on `after` (page with `last`/`before` instead)."
            ),
        ] = None,
    ) -> AsyncGenerator[DirectMessage, None]:
        context = context_of(info)
        point = None if after is None else resume_point(after, "DirectMessage")
        login = await context.require_viewer()
        async with context.live.follow(user_messages_channel(login)) as follow:
            replay: list[MessageRecord] = []
            newer = None
            if point is not None:
                replay, seam = await service(context).replay(login, point)
                newer = partial(_past_seam, seam)
            await follow.go_live(
                _every_message,
                _direct_message,
                viewer=login,
                token=context.token,
                per_viewer=True,
                newer=newer,
                replay=[message.to_event() for message in replay],
            )
            async for message in follow.events():
                yield message

    @strawberry.subscription(
        description="The read receipts of your talk partners: each time one marks your conversation "
        "read with something unread in it."
    )
    async def conversation_read(self, info: Info) -> AsyncGenerator[ReadReceipt, None]:
        context = context_of(info)
        login = await context.require_viewer()
        async with context.live.follow(receipts_channel(login)) as follow:
            await follow.go_live(
                _every_message, ReadReceipt.of_event, viewer=login, token=context.token, per_viewer=True
            )
            async for receipt in follow.events():
                yield receipt

    @strawberry.subscription(
        description="Your talk partners starting and stopping typing to you; an indicator nobody "
        "renews stops by itself after a few seconds."
    )
    async def typing(self, info: Info) -> AsyncGenerator[TypingEvent, None]:
        context = context_of(info)
        login = await context.require_viewer()
        expiry = context.services.provided(TypingExpiry)
        async with context.live.follow(typing_channel(login)) as follow:
            await follow.go_live(
                partial(_typing_news, expiry), TypingEvent.of_event, viewer=login, token=context.token
            )
            async for event in follow.events():
                yield event


def _typing_news(expiry: TypingExpiry, event: object) -> Verdict:
    if not isinstance(event, dict):
        return Verdict.SKIP
    expiry.heard(event)
    return Verdict.DELIVER


def _past_seam(seam: Seam, event: object) -> bool:
    return isinstance(event, dict) and seam.newer(UUID(event["id"]))


def _every_message(event: object) -> Verdict:
    """A user's own channel carries only messages to or from them."""
    return Verdict.DELIVER if isinstance(event, dict) else Verdict.SKIP


def _direct_message(event: dict[str, Any]) -> DirectMessage:
    users = {profile.login: User.of_profile(profile) for profile in event_users(event)}
    return DirectMessage.of(MessageRecord.from_event(event), users or None)
