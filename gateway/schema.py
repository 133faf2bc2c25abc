"""The composition root: assembles the domains into one ``strawberry.Schema``.

Each domain contributes ``<Domain>Query`` / ``<Domain>Mutation`` /
``<Domain>Subscription`` classes and, where it adds to the viewer's own view, a
``<Domain>Me`` mixin of ``Me``; this module lists them, and the root types
inherit every domain's fields.

``User`` is different: it belongs to ``gateway/users/``, and every domain's
types refer to it (``Room.creator``, ``Post.author``, ``DirectMessage.sender``
...), so the one ``User`` class is what they all return. The fields other
domains add to it (``User.rooms``, ``User.posts``, ``User.postCount``) are
declared in those domains as ``<Domain>User`` classes and joined onto
``User``'s Strawberry definition here, at import, by
``gateway.graph.compose.join_fields`` (see there why not by subclassing). So
``users/`` imports no other domain, the other domains import ``users/`` like
any lower module, and no module needs a lazy type or a late import.
"""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.extensions import DisableIntrospection, MaxTokensLimiter
from strawberry.schema.config import StrawberryConfig
from strawberry.types import Info

from gateway.blog.schema import BlogMutation, BlogQuery, BlogUser
from gateway.blog.types import comment_node, post_node
from gateway.broker.codec import EventCodec
from gateway.contacts.events import DISCOVERY, FANOUT_NUDGE
from gateway.contacts.schema import ContactsMe, ContactsMutation, ContactsSubscription
from gateway.graph.compose import join_fields
from gateway.graph.context import context_of
from gateway.graph.errors import ErrorCode, ErrorCodes, ErrorCodeSchema
from gateway.graph.limits import QueryLimits, limited_validation
from gateway.graph.metrics import StatementMetrics
from gateway.graph.node import Node, NodeType, global_id, resolve_node
from gateway.graph.observability import Observed
from gateway.graph.parser_cache import GuardedParserCache
from gateway.graph.plain_fields import PlainFieldsExecutor, install_lean_resolvers
from gateway.graph.scalars import SCALAR_OVERRIDES
from gateway.http.batch import BATCH_CEILING
from gateway.mail.schema import MailMe, MailMutation
from gateway.mail.types import email_node, folder_node
from gateway.messenger.schema import MessengerMe, MessengerMutation, MessengerSubscription
from gateway.messenger.types import conversation_node, direct_message_node, talk_partner_node
from gateway.rooms.events import ROOM_EVENT
from gateway.rooms.schema import RoomMutation, RoomQuery, RoomSubscription, RoomUser
from gateway.rooms.types import room_message_node, room_node
from gateway.settings import Settings
from gateway.users.schema import PresenceMutation, UserMutation, UserQuery, UserSubscription
from gateway.users.types import User, require_user, user_node

join_fields(User, RoomUser, BlogUser)


@strawberry.type
class MeUser:
    login: strawberry.Private[str]

    @strawberry.field(description="Your own profile.")
    async def user(self, info: Info) -> User:
        return await require_user(info, self.login)


@strawberry.type(description="The signed-in user's own view.")
class Me(Node, MeUser, MessengerMe, MailMe, ContactsMe):
    @classmethod
    def of(cls, login: str) -> Me:
        return cls(id=global_id("Me", login), login=login)


async def me_node(info: Info, login: str) -> Me | None:
    return Me.of(login) if await context_of(info).viewer() == login else None


#: What ``Query.node`` resolves: every type that implements ``Node``, by GraphQL name.
NODE_TYPES = {
    "User": NodeType(1, user_node),
    "Me": NodeType(1, me_node),
    "Room": NodeType(1, room_node),
    "Post": NodeType(1, post_node),
    "Folder": NodeType(2, folder_node),
    "TalkPartner": NodeType(2, talk_partner_node),
    "Conversation": NodeType(2, conversation_node),
    "DirectMessage": NodeType(3, direct_message_node),
    "RoomMessage": NodeType(3, room_message_node),
    "Email": NodeType(2, email_node),
    "Comment": NodeType(2, comment_node),
}


@strawberry.type(
    description="What can be read: a few things by name anonymously (users, rooms, posts), "
    "everything of your own through `me` once signed in (send `Authorization: Bearer <token>`)."
)
class Query(UserQuery, RoomQuery, BlogQuery):
    @strawberry.field(description="The signed-in user's view; null when not signed in.")
    async def me(self, info: Info) -> Me | None:
        login = await context_of(info).viewer()
        return Me.of(login) if login else None

    @strawberry.field(
        description="Any object by its global id; null when there is none or it is not yours "
        "(another user's folders, talk partners and `Me`). BAD_USER_INPUT for a malformed id."
    )
    async def node(
        self,
        info: Info,
        id: Annotated[
            strawberry.ID, strawberry.argument(description="A global id, as any `Node`'s `id` field gave it.")
        ],
    ) -> Node | None:
        found: Node | None = await resolve_node(info, NODE_TYPES, id)
        return found


@strawberry.type(
    description="What can be changed, always as the signed-in user (the token's, never one named in "
    "the arguments). Creating mutations take an idempotency key (`clientMessageId`, or "
    "`clientMutationId`) that makes a retry after a lost answer store nothing twice."
)
class Mutation(
    UserMutation,
    PresenceMutation,
    MessengerMutation,
    RoomMutation,
    BlogMutation,
    MailMutation,
    ContactsMutation,
):
    pass


@strawberry.type(
    description="Live events over a WebSocket on /graphql (graphql-transport-ws; send the token as "
    "`authorization` in the connection_init payload). A subscription ends with UNAVAILABLE when live "
    "updates are lost; what was missed meanwhile is stored and can be queried."
)
class Subscription(UserSubscription, MessengerSubscription, RoomSubscription, ContactsSubscription):
    pass


def event_codec() -> EventCodec:
    """How the domains' subscription events cross a broker (the messenger's are plain JSON)."""
    return EventCodec([ROOM_EVENT, DISCOVERY, FANOUT_NUDGE])


#: Documents (with their operation names) a schema keeps as known, as many as parses it caches.
KNOWN_DOCUMENTS = 1000


def build_schema(settings: Settings | None = None, *, plain_fields: bool | None = None) -> strawberry.Schema:
    """The composed schema; ``plain_fields=False`` executes with graphql-core's reference
    executor alone (see ``gateway/graph/plain_fields.py``), as ``GATEWAY_PLAIN_FIELDS=0``
    does when it is not given."""
    settings = settings or Settings()
    if plain_fields is None:
        plain_fields = settings.plain_fields
    introspection = [] if settings.introspection_allowed else [DisableIntrospection]
    schema = ErrorCodeSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        # ErrorCode is no field's type: it is listed so the SDL, and the code clients generate
        # from it, carry the codes errors hold (see its description).
        types=[ErrorCode],
        scalar_overrides=SCALAR_OVERRIDES,
        config=StrawberryConfig(
            batching_config={"max_operations": BATCH_CEILING},
            # @defer and @stream (queries over HTTP, multipart/mixed: gateway/http/incremental.py);
            # a document without them still executes, and answers, as a plain ExecutionResult.
            enable_experimental_incremental_execution=True,
        ),
        execution_context_class=PlainFieldsExecutor if plain_fields else None,
        # A document run before skips the steps that depend on its text alone (the
        # reference executor keeps Strawberry's own execute).
        known_documents=KNOWN_DOCUMENTS if plain_fields else 0,
        parse_only=(GuardedParserCache, MaxTokensLimiter),
        extensions=[
            Observed,
            ErrorCodes,
            StatementMetrics,
            lambda: GuardedParserCache(maxsize=KNOWN_DOCUMENTS),
            lambda: MaxTokensLimiter(max_token_count=settings.max_tokens),
            *introspection,
            limited_validation(QueryLimits.of(settings)),
        ],
    )
    if plain_fields:
        install_lean_resolvers(schema)
    return schema
