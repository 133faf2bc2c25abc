"""``messageReceived`` over graphql-transport-ws: to the recipient, to the sender's other
connections, to every device of each, and never to anyone else."""

from __future__ import annotations

import pytest
from aiohttp import web
from gql import GraphQLRequest
from gql.transport.exceptions import TransportQueryError

from tests.support.client import Api
from tests.support.messenger import MESSAGE_RECEIVED, SEND, listening, send


async def test_delivers_to_recipient_and_senders_other_connection_never_to_a_third(
    api: Api, app: web.Application
) -> None:
    sender = await api.sign_up("sender")
    recipient = await api.sign_up("recipient")
    bystander = await api.sign_up("bystander")
    async with listening(api, app, recipient, recipient, sender, bystander) as listeners:
        phone, laptop, senders_tablet, third = listeners
        sent = await send(api, sender, recipient.login, "Hello there")

        expected = {
            "id": sent["id"],
            "content": "Hello there",
            "sentAt": sent["sentAt"],
            "conversationId": sent["conversationId"],
            "sender": {"login": sender.login, "firstname": "Test"},
            "recipient": {"login": recipient.login},
        }
        assert await phone.next() == expected
        assert await laptop.next() == expected
        assert await senders_tablet.next() == expected

        # The bystander's stream is ordered: if it had been given the message
        # above, that would come out before this one, which is its own.
        own = await send(api, recipient, bystander.login, "Just for you")
        assert (await third.next())["id"] == own["id"]
        assert third.events.empty()
        # The recipient's devices see their own outgoing message too.
        assert (await phone.next())["id"] == own["id"]
        assert (await laptop.next())["id"] == own["id"]
        assert senders_tablet.events.empty()


async def test_a_retried_send_is_delivered_once(api: Api, app: web.Application) -> None:
    sender = await api.sign_up("sender")
    recipient = await api.sign_up("recipient")
    async with listening(api, app, recipient) as (phone,):
        first = await send(api, sender, recipient.login, "once", key="k-1")
        again = await send(api, sender, recipient.login, "once", key="k-1")
        assert again["id"] == first["id"]
        marker = await send(api, sender, recipient.login, "marker")
        assert (await phone.next())["id"] == first["id"]
        assert (await phone.next())["id"] == marker["id"]


async def test_user_fields_of_events_are_fresh(api: Api, app: web.Application) -> None:
    """Loaders are reset per event: a profile change shows in the next event."""
    sender = await api.sign_up("sender", firstname="Before")
    recipient = await api.sign_up("recipient")
    async with listening(api, app, recipient) as (phone,):
        await send(api, sender, recipient.login, "one")
        assert (await phone.next())["sender"]["firstname"] == "Before"
        await api.ok('mutation { updateProfile(input: {firstname: "After"}) { login } }', token=sender.token)
        await send(api, sender, recipient.login, "two")
        assert (await phone.next())["sender"]["firstname"] == "After"


async def test_subscribing_needs_a_signed_in_user(api: Api) -> None:
    async with api.websocket() as session:
        with pytest.raises(TransportQueryError) as raised:
            async for _ in session.subscribe(GraphQLRequest(MESSAGE_RECEIVED)):
                pass
    assert raised.value.errors
    assert raised.value.errors[0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_mutations_over_the_websocket_deliver_too(api: Api, app: web.Application) -> None:
    sender = await api.sign_up("sender")
    recipient = await api.sign_up("recipient")
    async with listening(api, app, recipient) as (phone,):
        async with api.websocket(sender.token) as session:
            result = await session.execute(
                GraphQLRequest(SEND, variable_values={"to": recipient.login, "content": "via ws"})
            )
        assert (await phone.next())["id"] == result["sendMessage"]["id"]
