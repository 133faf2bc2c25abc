"""The users domain's root fields: ``Query.user`` and the account mutations, with their inputs."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from gateway.graph import validation
from gateway.graph.context import Context, context_of
from gateway.ratelimit.policy import Limit
from gateway.users import rules
from gateway.users.records import SessionRecord, UserRecord
from gateway.users.service import AccountService, NewAccount
from gateway.users.store import SessionStore, UserStore
from gateway.users.types import AuthPayload, User, user_node


def service(context: Context) -> AccountService:
    return AccountService(
        context.store(UserStore), context.store(SessionStore), context.settings, context.pubsub
    )


@strawberry.input
class SignUpInput:
    login: str
    password: str
    firstname: str
    lastname: str
    email: str
    bio: str | None = ""


@strawberry.input(description="Only the fields given change.")
class ProfileInput:
    firstname: str | None = strawberry.UNSET
    lastname: str | None = strawberry.UNSET
    email: str | None = strawberry.UNSET
    bio: str | None = strawberry.UNSET


def _signed_in(context: Context, record: UserRecord, session: SessionRecord) -> AuthPayload:
    context.session_started(session.token, session)
    return AuthPayload(token=session.token, user=User.of(record), expires_at=session.expires_at)


@strawberry.type
class UserQuery:
    @strawberry.field(description="A user by login; null when there is none.")
    async def user(self, info: Info, login: str) -> User | None:
        return await user_node(info, login)


@strawberry.type
class UserMutation:
    @strawberry.mutation(description="Create an account and sign in. CONFLICT when the login is taken.")
    async def sign_up(self, info: Info, input: SignUpInput) -> AuthPayload:
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
    async def sign_in(self, info: Info, login: str, password: str) -> AuthPayload:
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
    async def update_profile(self, info: Info, input: ProfileInput) -> User:
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
