"""Users: ``user(login)`` and ``me`` through the gateway, beside the same reads on the driver.

Run: ``.venv/bin/python -m bench.bench_users`` (or ``scripts/bench``).
"""

from __future__ import annotations

import asyncio

from bench.harness import counted, floor_read, floor_under_test, gateway_under_test, report, side_by_side
from gateway.users.store import SessionStore, UserStore

REQUESTS = 2000
CONCURRENCY = 32
USER_BY_LOGIN = '{ user(login: "benchuser") { login firstname } }'


async def main() -> None:
    async with gateway_under_test() as target, floor_under_test(target) as floor:
        token = await target.sign_up("benchuser")
        users = UserStore(target.db, target.settings)
        sessions = SessionStore(target.db, target.settings)

        rows = [
            *await side_by_side(
                (
                    "gateway: user(login) { login firstname }",
                    lambda _: target.graphql(USER_BY_LOGIN),
                ),
                ("floor:   HTTP + UserStore, no GraphQL", lambda _: floor_read(floor, USER_BY_LOGIN)),
                (
                    "driver:  SELECT user by login",
                    lambda _: counted(users.get_many(["benchuser"])),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            *await side_by_side(
                (
                    "gateway: me { user { login email } }",
                    lambda _: target.graphql("{ me { user { login email } } }", token=token),
                ),
                (
                    "driver:  session + user read",
                    lambda _: counted(_me_raw(sessions, users, token)),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
        ]
        report(f"users ({REQUESTS} requests, concurrency {CONCURRENCY})", rows)


async def _me_raw(sessions: SessionStore, users: UserStore, token: str) -> None:
    login = await sessions.login_of(token)
    assert login is not None
    await users.get_many([login])


if __name__ == "__main__":
    asyncio.run(main())
