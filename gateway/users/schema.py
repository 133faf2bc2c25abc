"""The users domain's root fields: ``Query.user`` and the account mutations, with their inputs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Annotated, Any

import strawberry
from strawberry.types import Info

from gateway.errors import NotFound
from gateway.graph import validation
from gateway.graph.context import Context, context_of
from gateway.graph.errors import QueryTooComplex
from gateway.graph.live import Verdict
from gateway.ratelimit.policy import Limit
from gateway.users import rules
from gateway.users.presence import Presence, PresenceState, presence_channel
from gateway.users.records import SessionRecord, UserRecord
from gateway.users.service import AccountService, NewAccount
from gateway.users.session_cache import SessionCache
from gateway.users.store import UserStore
from gateway.users.types import AuthPayload, PresenceView, User, load_user, user_node


def service(context: Context) -> AccountService:
    return AccountService(
        context.store(UserStore),
        context.services.provided(SessionCache),
        context.settings,
        context.pubsub,
    )


@strawberry.input(description="A new account. Each field that fails its rule is BAD_USER_INPUT naming it.")
class SignUpInput:
    login: str = strawberry.field(
        description="3-30 characters: a letter or digit, then letters, digits, `_`, `.` or `-`. Stored "
        "lower-case (`Alice` signs up `alice`); CONFLICT when taken."
    )
    password: str = strawberry.field(description="8-128 characters. Only a hash of it is stored.")
    firstname: str = strawberry.field(description="1-100 characters after trimming.")
    lastname: str = strawberry.field(description="1-100 characters after trimming.")
    email: str = strawberry.field(
        description="An email address (at most 254 characters). Shown to you only, never to others."
    )
    bio: str | None = strawberry.field(default="", description="At most 2000 characters; null is empty.")


@strawberry.input(description="Only the fields given change; the rules are SignUpInput's.")
class ProfileInput:
    firstname: str | None = strawberry.field(
        default=strawberry.UNSET, description="1-100 characters after trimming; not null."
    )
    lastname: str | None = strawberry.field(
        default=strawberry.UNSET, description="1-100 characters after trimming; not null."
    )
    email: str | None = strawberry.field(default=strawberry.UNSET, description="An email address; not null.")
    bio: str | None = strawberry.field(
        default=strawberry.UNSET, description="At most 2000 characters; null empties it."
    )


#: The most users one presenceChanged subscription may watch.
MAX_WATCHED = 100


def _signed_in(context: Context, record: UserRecord, session: SessionRecord) -> AuthPayload:
    context.session_started(session.token, session)
    return AuthPayload(token=session.token, user=User.of(record), expires_at=session.expires_at)


@strawberry.type
class UserQuery:
    @strawberry.field(description="A user by login; null when there is none.")
    async def user(
        self,
        info: Info,
        login: Annotated[
            str, strawberry.argument(description="The login, in any case (logins are lower-case).")
        ],
    ) -> User | None:
        return await user_node(info, login)


@strawberry.type
class UserMutation:
    @strawberry.mutation(description="Create an account and sign in. CONFLICT when the login is taken.")
    async def sign_up(
        self,
        info: Info,
        input: Annotated[
            SignUpInput, strawberry.argument(description="Your login, password, names, email and bio.")
        ],
    ) -> AuthPayload:
        context = context_of(info)
        await context.rate_limit(Limit.SIGN_UP)
        account = NewAccount(
            login=validation.login(input.login, "login"),
            firstname=rules.name(input.firstname, "firstname"),
            lastname=rules.name(input.lastname, "lastname"),
            email=validation.email(input.email, "email"),
            bio=rules.bio(input.bio),
            password=rules.password(input.password),
        )
        record, session = await service(context).sign_up(account)
        return _signed_in(context, record, session)

    @strawberry.mutation(
        description="Sign in; one UNAUTHENTICATED error for any wrong login or password. After a few "
        "failures for one login from one address, each further attempt from there must wait longer "
        "(RATE_LIMITED); a success resets it. Attempts for one login from addresses it has not signed in "
        "from lately share a looser ceiling."
    )
    async def sign_in(
        self,
        info: Info,
        login: Annotated[str, strawberry.argument(description="Your login, in any case.")],
        password: Annotated[str, strawberry.argument(description="Your password, exactly as at sign-up.")],
    ) -> AuthPayload:
        context = context_of(info)
        await context.rate_limit(Limit.SIGN_IN)
        key = rules.login_or_none(login)
        # Unknown and malformed logins are throttled alike, so throttling reveals no login.
        throttled = key or login.strip().lower()[:100]
        address = context.client_address
        await context.rate_limits.begin_sign_in(throttled, address)
        accounts = service(context)
        record = await accounts.check_password(key, password)
        await context.rate_limits.sign_in_succeeded(throttled, address)
        return _signed_in(context, record, await accounts.start_session(record.login))

    @strawberry.mutation(description="Revoke the token this request was sent with.")
    async def sign_out(self, info: Info) -> bool:
        context = context_of(info)
        await context.require_viewer()
        assert context.token is not None
        await service(context).sign_out(context.token)
        return True

    @strawberry.mutation(description="Change your profile; only the fields given change.")
    async def update_profile(
        self,
        info: Info,
        input: Annotated[
            ProfileInput, strawberry.argument(description="The fields to change, and only those.")
        ],
    ) -> User:
        context = context_of(info)
        login = await context.require_viewer()
        changes: dict[str, str] = {}
        for name in rules.NAMES:
            value = getattr(input, name)
            if value is not strawberry.UNSET:
                changes[name] = rules.name(rules.not_null(value, name), name)
        if input.email is not strawberry.UNSET:
            changes["email"] = validation.email(rules.not_null(input.email, "email"))
        if input.bio is not strawberry.UNSET:
            changes["bio"] = rules.bio(input.bio)
        return User.of(await service(context).update_profile(login, changes))


@strawberry.type(description="A user's presence as it stands when you subscribe, then each change.")
class PresenceEvent:
    _login: strawberry.Private[str]
    presence: PresenceView = strawberry.field(description="Their presence as it now stands.")

    @strawberry.field(description="Whose presence.")
    async def user(self, info: Info) -> User:
        found = await load_user(info, self._login)
        if found is None:
            raise NotFound(f"No user '{self._login}'.")
        return found


@strawberry.type
class PresenceMutation:
    @strawberry.mutation(
        description="Appear offline to everyone, or show your presence again: the choice is stored and "
        "holds on every device until changed. Returns `visible`. Rate limited (RATE_LIMITED)."
    )
    async def set_presence_visible(
        self,
        info: Info,
        visible: Annotated[
            bool,
            strawberry.argument(
                description="false: nobody sees you online (your sockets stay open; `lastSeenAt` stays as "
                "it was); true: your presence shows again."
            ),
        ],
    ) -> bool:
        context = context_of(info)
        login = await context.require_viewer()
        await context.rate_limit(Limit.PRESENCE, login)
        await context.services.provided(Presence).set_visible(login, visible)
        return visible


@strawberry.type
class UserSubscription:
    @strawberry.subscription(
        description=f"The presence of up to {MAX_WATCHED} users: first as it stands, then each change. "
        "Users whose presence you may not see (not yourself, a talk partner or a room mate) are never "
        "reported. More than 100 logins is QUERY_TOO_COMPLEX."
    )
    async def presence_changed(
        self,
        info: Info,
        logins: Annotated[
            list[str],
            strawberry.argument(description="The users to watch, by login; duplicates count once."),
        ],
    ) -> AsyncGenerator[PresenceEvent, None]:
        context = context_of(info)
        if len(logins) > MAX_WATCHED:
            raise QueryTooComplex(f"`logins` may name at most {MAX_WATCHED} users.", field="logins")
        wanted = list(dict.fromkeys(validation.login(login, "logins") for login in logins))
        viewer = await context.require_viewer()
        presence = context.services.provided(Presence)
        visible = sorted(await presence.visible_to(viewer, wanted))
        if not visible:
            await asyncio.Event().wait()  # nothing to tell, ever: held until the client ends it
        async with context.live.follow(*(presence_channel(login) for login in visible)) as follow:
            states = await presence.states(visible)
            for login in visible:
                yield PresenceEvent(_login=login, presence=PresenceView.of(states[login]))
            # Watched for as long as the subscription lives, parked with the hub or not.
            follow.on_end(presence.watch(visible, states))
            verdict = _PresenceNews(presence, {login: states[login].online for login in visible})
            await follow.go_live(verdict, _presence_event, viewer=viewer, token=context.token)
            async for event in follow.events():
                yield event


class _PresenceNews:
    """One subscription's verdicts: a watched user's change, once (the announcement of a
    change the subscription's first answer already told is skipped)."""

    def __init__(self, presence: Presence, told: dict[str, bool]) -> None:
        self.presence = presence
        self.told = told

    def __call__(self, event: Any) -> Verdict:
        if not isinstance(event, dict) or event.get("login") not in self.told:
            return Verdict.SKIP
        login, online = str(event["login"]), bool(event.get("online"))
        self.presence.heard(login, online)
        if self.told[login] is online:
            return Verdict.SKIP
        self.told[login] = online
        return Verdict.DELIVER


def _presence_event(event: dict[str, Any]) -> PresenceEvent:
    return PresenceEvent(_login=str(event["login"]), presence=PresenceView.of(PresenceState.of_event(event)))
