"""Shared queries and helpers of the contacts tests."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from gql import GraphQLRequest

from gateway.broker.memory import InProcessPubSub
from gateway.contacts import rules
from gateway.contacts.events import contacts_channel
from gateway.contacts.identity import Identity, identity_hash
from gateway.contacts.job_store import FanoutJobs
from gateway.contacts.records import SHARDS
from gateway.server.app import SERVICES
from tests.support.client import Api, Response
from tests.support.webhook import CodeReceiver

REQUEST = """mutation($network: String!, $networkId: String!) {
  requestIdentityVerification(network: $network, networkId: $networkId)
}"""
LINK = """mutation($network: String!, $networkId: String!, $code: String!) {
  linkIdentity(network: $network, networkId: $networkId, code: $code) { network networkId linkedAt }
}"""
UNLINK = """mutation($network: String!, $networkId: String!) {
  unlinkIdentity(network: $network, networkId: $networkId)
}"""
UPLOAD = """mutation($network: String!, $contacts: [ContactInput!]!) {
  uploadContacts(network: $network, contacts: $contacts) {
    contacts { network networkId name discoveredAt user { login } }
    discovered { login }
  }
}"""
CONTACTS = """query($first: Int, $after: String, $network: String) {
  me { contacts(first: $first, after: $after, network: $network) {
    edges { cursor node { network networkId name discoveredAt user { login firstname } } }
    pageInfo { hasNextPage endCursor }
  } }
}"""
IDENTITIES = "{ me { identities { network networkId linkedAt } } }"
DISCOVERED = "subscription { contactDiscovered { network networkId name discoveredAt user { login } } }"


def normalised(network: str, network_id: str) -> str:
    return rules.normalise(rules.network(network), network_id, "networkId")


async def request_code(api: Api, codes: CodeReceiver, token: str, network: str, network_id: str) -> str:
    """Ask for a code and read it where the operator's sender received it."""
    variables = {"network": network, "networkId": network_id}
    assert (await api.ok(REQUEST, variables, token=token))["requestIdentityVerification"] is True
    return codes.last_code(rules.network(network), normalised(network, network_id))


async def link(api: Api, codes: CodeReceiver, token: str, network: str, network_id: str) -> Response:
    """The whole verified link: request a code, receive it, link with it."""
    code = await request_code(api, codes, token, network, network_id)
    return await api.call(LINK, {"network": network, "networkId": network_id, "code": code}, token=token)


async def linked(api: Api, codes: CodeReceiver, token: str, network: str, network_id: str) -> dict[str, Any]:
    response = await link(api, codes, token, network, network_id)
    assert not response.errors, response.errors
    assert response.data is not None
    return response.data["linkIdentity"]


def fresh_phone() -> str:
    """A random UK mobile number, written with spaces: "+44 79 1234 5678"."""
    digits = f"{uuid.uuid4().int % 10**8:08d}"
    return f"+44 79 {digits[:4]} {digits[4:]}"


def e164(phone: str) -> str:
    return "+" + "".join(c for c in phone if c.isdigit())


async def indexed_by(app: web.Application, network: str, network_id: str) -> list[str]:
    """The logins the reverse index lists for an identity (read straight from Cassandra)."""
    services = app[SERVICES]
    digest = identity_hash(services.settings.contacts_identity_pepper.encode(), Identity(network, network_id))
    rows = await services.db.execute_all("SELECT login FROM contact_index WHERE identity_hash = ?", (digest,))
    return [r["login"] for r in rows]


async def all_contacts(api: Api, token: str, network: str | None = None) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    after = None
    while True:
        data = await api.ok(CONTACTS, {"first": 100, "after": after, "network": network}, token=token)
        page = data["me"]["contacts"]
        nodes.extend(edge["node"] for edge in page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            return nodes
        after = page["pageInfo"]["endCursor"]


@contextlib.asynccontextmanager
async def discoveries(
    api: Api, app: web.Application, login: str, token: str
) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
    """A live ``contactDiscovered`` subscription of ``login``; events land in the queue.

    Yields only once the server has registered the subscription, so nothing the
    test does afterwards can be published before it listens.
    """
    events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    pubsub = app[SERVICES].pubsub
    assert isinstance(pubsub, InProcessPubSub)
    channel = contacts_channel(login)
    before = pubsub.subscriber_count(channel)
    async with api.websocket(token) as session:

        async def listen() -> None:
            async for event in session.subscribe(GraphQLRequest(DISCOVERED)):
                await events.put(event["contactDiscovered"])

        task = asyncio.create_task(listen())
        try:
            for _ in range(500):
                if pubsub.subscriber_count(channel) > before:
                    break
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
            else:
                raise AssertionError("the subscription never registered")
            yield events
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def nothing_arrives(events: asyncio.Queue, seconds: float = 0.5) -> bool:
    try:
        await asyncio.wait_for(events.get(), timeout=seconds)
    except TimeoutError:
        return True
    return False


async def fanouts_done(app: web.Application, within: float = 120.0) -> None:
    """Wait (bounded) until no fan-out job of a linked identity is left in any shard."""
    jobs = FanoutJobs(app[SERVICES].db)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        pending = [job for shard in range(SHARDS) for job in await jobs.waiting(shard, 1)]
        if not pending:
            return
        assert loop.time() < deadline, f"fan-out jobs still pending: {pending}"
        await asyncio.sleep(0.1)


async def concurrent_claims_of_one_identity_one_wins(api: Api, other_api: Api, codes: CodeReceiver) -> None:
    """Twenty users claim one identity at once, alternating between two gateways: one wins."""
    instances = itertools.cycle([api, other_api])
    claimants = await asyncio.gather(*(api.sign_up("claim") for _ in range(20)))
    email = f"Shared.{claimants[0].login}@Example.com"
    # Each claimant proves they received a code (the sender delivers every request), then
    # all link at once: the owner claim is an LWT, so exactly one wins.
    proofs = [await request_code(api, codes, c.token, "email", email) for c in claimants]
    responses = await asyncio.gather(
        *(
            next(instances).call(LINK, {"network": "email", "networkId": email, "code": code}, token=c.token)
            for c, code in zip(claimants, proofs, strict=True)
        )
    )
    winners = [c for c, r in zip(claimants, responses, strict=True) if not r.errors]
    losers = [r for r in responses if r.errors]
    assert len(winners) == 1
    assert len(losers) == 19
    assert all(r.codes == ["CONFLICT"] for r in losers)
    assert all(r.errors[0]["extensions"]["field"] == "networkId" for r in losers)
    winner_identities = (await api.ok(IDENTITIES, token=winners[0].token))["me"]["identities"]
    assert [(i["network"], i["networkId"]) for i in winner_identities] == [("email", email.lower())]
    for loser in claimants:
        if loser is not winners[0]:
            assert (await api.ok(IDENTITIES, token=loser.token))["me"]["identities"] == []
