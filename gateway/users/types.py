"""The ``User`` type and what every domain uses to return users.

``User`` (the fields other domains add are joined at the composition root) and
``AuthPayload``; the lookups through the request's user loader
(``load_user``, ``require_user``, ``users_by_login`` ...) and the helpers that
let a list's items answer with users their list resolver prefetched
(``prefetched_user_field`` ...).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any

import strawberry
from strawberry.types import Info

from gateway.errors import NotFound
from gateway.graph.context import context_of
from gateway.graph.cost import text_bound
from gateway.graph.live import viewer_dependent
from gateway.graph.node import ID_DESCRIPTION, Node, global_id
from gateway.graph.plain_fields import NOT_READ, computed_field, plain_reader
from gateway.users import rules
from gateway.users.loaders import presence_loader, user_loader
from gateway.users.presence import PresenceState
from gateway.users.records import UserProfile, UserRecord


def _user_id(self: User) -> strawberry.ID:
    return global_id("User", self.login)


@strawberry.type(name="Presence", description="Whether a user is online, and when they were last seen.")
class PresenceView:
    online: bool = strawberry.field(
        description="While any of the user's signed-in WebSockets is open, on any gateway process."
    )
    last_seen_at: datetime | None = strawberry.field(
        description="When their last socket closed; null while online or when never seen."
    )

    @classmethod
    def of(cls, state: PresenceState) -> PresenceView:
        return cls(online=state.online, last_seen_at=state.last_seen_at)


@strawberry.type(description="A registered user.")
class User(Node):
    """The fields other domains add (``rooms``, ``posts`` ...) are joined onto this
    type at the composition root, ``gateway/schema.py``. The global id is made when
    selected: pages of items carry their users, whose ids are seldom asked for."""

    id: strawberry.ID = computed_field(_user_id, description=ID_DESCRIPTION)
    login: str = strawberry.field(
        description="The user's unique name: 3-30 characters of `a-z`, `0-9`, `_`, `.`, `-`, lower-case. "
        "What other fields and arguments name a user by (`user(login:)`, `sendMessage(to:)`)."
    )
    firstname: str = strawberry.field(description="Given name, as the user wrote it: 1-100 characters.")
    lastname: str = strawberry.field(description="Family name, as the user wrote it: 1-100 characters.")
    bio: str = strawberry.field(
        description="What the user says of themselves: at most 2000 characters; empty when none.",
        metadata=text_bound(rules.BIO_MAX),
    )
    created_at: datetime = strawberry.field(description="When the account was created.")
    #: None when made from a :class:`UserProfile` (an event's author): read when asked for.
    _email: strawberry.Private[str | None]

    @strawberry.field(description="Only on yourself; null for others.", metadata=viewer_dependent())
    async def email(self, info: Info) -> str | None:
        context = context_of(info)
        if await context.viewer() != self.login:
            return None
        if self._email is not None:
            return self._email
        record = await context.loader(user_loader).load(self.login)
        return record.email if record else None

    @strawberry.field(
        description="Null unless you are this user, a talk partner of theirs, or in a room with them. "
        "A user who chose to appear offline is never shown online.",
        metadata=viewer_dependent(),
    )
    async def presence(self, info: Info) -> PresenceView | None:
        state = await context_of(info).loader(presence_loader).load(self.login)
        return PresenceView.of(state) if state is not None else None

    @classmethod
    def of(cls, record: UserRecord) -> User:
        return cls(
            login=record.login,
            firstname=record.firstname,
            lastname=record.lastname,
            bio=record.bio,
            created_at=record.created_at,
            _email=record.email,
        )

    @classmethod
    def of_profile(cls, profile: UserProfile) -> User:
        """The user as an event carried them: everything but the email, read only if you are them."""
        return cls(
            login=profile.login,
            firstname=profile.firstname,
            lastname=profile.lastname,
            bio=profile.bio,
            created_at=profile.created_at,
            _email=None,
        )


async def load_user(info: Info, login: str) -> User | None:
    """A user through the request's batching loader."""
    record = await context_of(info).loader(user_loader).load(login)
    return User.of(record) if record else None


async def user_node(info: Info, login: str) -> User | None:
    """``node``'s lookup of a ``User`` global id."""
    key = rules.login_or_none(login)
    return await load_user(info, key) if key else None


async def load_users(info: Info, logins: Iterable[str]) -> list[User]:
    """Users in the given order, skipping logins that no longer exist."""
    records = await context_of(info).loader(user_loader).load_many(list(logins))
    return [User.of(r) for r in records if r is not None]


async def users_by_login(info: Info, logins: Iterable[str]) -> dict[str, User]:
    """The users of ``logins`` (those that exist), loaded in one batch: list
    resolvers hand them to their items (see ``gateway/graph/selection.py``)."""
    wanted = sorted(set(logins))
    records = await context_of(info).loader(user_loader).load_many(wanted)
    return {login: User.of(record) for login, record in zip(wanted, records, strict=True) if record}


async def require_user(info: Info, login: str) -> User:
    """A user that must exist (the acting user, a message's author ...)."""
    user = await load_user(info, login)
    if user is None:
        raise NotFound(f"No user '{login}'.")
    return user


#: Users a list resolver loaded for its items in one batch, by login; None: nothing prefetched.
Prefetched = Mapping[str, User] | None

# The helpers below serve the plain (not async) resolvers of list items: they
# return the prefetched value itself, or an awaitable that graphql-core awaits, so
# a list resolved from prefetched users needs no awaitable per item. Such a
# resolver declares its GraphQL type with ``graphql_type=``.


def read_prefetched(prefetched: Prefetched, login: str | None) -> Any:
    """``login``'s user when it needs no loading (None without a login), else ``NOT_READ``.

    The user resolvers below answer with it first, and the same function is their plain
    reader (``gateway/graph/plain_fields.py``), so the fast path reads exactly what the
    resolver returns."""
    if login is None:
        return None
    if prefetched is not None and login in prefetched:
        return prefetched[login]
    return NOT_READ


def prefetched_user(info: Info, prefetched: Prefetched, login: str) -> User | Awaitable[User]:
    """``login``'s user, which must exist: from ``prefetched``, or loaded."""
    found = read_prefetched(prefetched, login)
    return require_user(info, login) if found is NOT_READ else found


def prefetched_user_or_none(
    info: Info, prefetched: Prefetched, login: str | None
) -> User | Awaitable[User | None] | None:
    """``login``'s user (None without a login or a user): from ``prefetched``, or loaded."""
    found = read_prefetched(prefetched, login)
    return load_user(info, login) if found is NOT_READ and login is not None else found


def prefetched_user_field(
    login_of: Callable[[Any], str | None], *, users: str = "_users", optional: bool = False, **options: Any
) -> Any:
    """A user field of a list's item: ``login_of(item)``'s user from the users the list
    prefetched into the item's ``users`` attribute (on the plain-fields path), else
    loaded. ``optional``: null without a login or a user (else the user must exist)."""
    users_of = attrgetter(users)

    def read(item: Any) -> Any:
        return read_prefetched(users_of(item), login_of(item))

    if optional:

        def resolve_or_none(self: Any, info: Info) -> Any:
            return prefetched_user_or_none(info, users_of(self), login_of(self))

        return strawberry.field(
            resolver=resolve_or_none, graphql_type=User | None, metadata=plain_reader(read), **options
        )

    def resolve(self: Any, info: Info) -> Any:
        login = login_of(self)
        assert login is not None
        return prefetched_user(info, users_of(self), login)

    return strawberry.field(resolver=resolve, graphql_type=User, metadata=plain_reader(read), **options)


def prefetched_users(
    info: Info, prefetched: Prefetched, logins: Sequence[str]
) -> list[User] | Awaitable[list[User]]:
    """The users of ``logins`` in order, skipping missing ones: from ``prefetched`` when
    it has them all, or loaded."""
    if prefetched is not None and all(login in prefetched for login in logins):
        return [prefetched[login] for login in logins]
    return load_users(info, logins)


@strawberry.type(description="A new session: what signUp and signIn answer.")
class AuthPayload:
    token: str = strawberry.field(
        description="The session's bearer token: send it as `Authorization: Bearer <token>` (over a "
        "WebSocket, as `authorization` in the connection_init payload). Opaque; keep it secret. signOut "
        "revokes it."
    )
    user: User = strawberry.field(description="The signed-in user.")
    expires_at: datetime = strawberry.field(
        description="When the token stops working (30 days after sign-in unless the gateway is set "
        "otherwise); sign in again then."
    )
