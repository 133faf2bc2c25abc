"""Every contacts argument is validated and names its field; the pure normalisation rules."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.contacts import rules
from gateway.contacts.identity import Identity, identity_hash
from gateway.errors import BadUserInput
from tests.support.client import Account, Api
from tests.support.contacts import CONTACTS, DISCOVERED, IDENTITIES, LINK, UPLOAD, fresh_phone


@pytest.fixture(scope="module")
async def account(api: Api) -> Account:
    return await api.sign_up("valid")


@pytest.mark.parametrize(
    ("network", "network_id", "field"),
    [
        ("msn", "someone@hotmail.com", "network"),
        ("", "+447912345678", "network"),
        ("tel", "", "networkId"),
        ("tel", "   ", "networkId"),
        ("tel", "0612345678", "networkId"),  # national, and no default country code
        ("tel", "+44 79", "networkId"),  # too short
        ("tel", "+1234567890123456", "networkId"),  # 16 digits: longer than E.164 allows
        ("tel", "+0 79 1234 5678", "networkId"),  # no country code starts with 0
        ("tel", "+44 79 CALL NOW", "networkId"),
        ("tel", "+44 7912 345678 ext 12", "networkId"),
        ("email", "not-an-address", "networkId"),
        ("email", "a@b", "networkId"),
        ("email", "x" * 250 + "@example.com", "networkId"),
        ("fb", "zuck", "networkId"),
        ("fb", "1" * 21, "networkId"),
    ],
)
async def test_link_identity_rejects_bad_input(
    api: Api, account: Account, network: str, network_id: str, field: str
) -> None:
    variables = {"network": network, "networkId": network_id, "code": "123456"}
    error = await api.error(LINK, variables, token=account.token)
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": field}
    assert (await api.ok(IDENTITIES, token=account.token))["me"]["identities"] == []


@pytest.mark.parametrize(
    ("network", "contacts", "field"),
    [
        ("skype", [], "network"),
        ("tel", [{"networkId": "+447912345678", "name": ""}], "contacts[0].name"),
        ("tel", [{"networkId": "+447912345678", "name": "   "}], "contacts[0].name"),
        ("tel", [{"networkId": "+447912345678", "name": "n" * 101}], "contacts[0].name"),
        ("tel", [{"networkId": "+447912345678"}, {"networkId": "12"}], "contacts[1].networkId"),
        ("email", [{"networkId": "ok@example.com"}, {"networkId": "+447912345678"}], "contacts[1].networkId"),
        ("fb", [{"networkId": ""}], "contacts[0].networkId"),
        ("tel", [{"networkId": f"+1555000{i:04d}"} for i in range(5001)], "contacts"),
    ],
)
async def test_upload_contacts_rejects_bad_input_and_stores_nothing(
    api: Api, network: str, contacts: list[dict[str, Any]], field: str
) -> None:
    account = await api.sign_up("badup")
    await api.ok(
        UPLOAD,
        {"network": "tel", "contacts": [{"networkId": fresh_phone(), "name": "Kept"}]},
        token=account.token,
    )
    error = await api.error(UPLOAD, {"network": network, "contacts": contacts}, token=account.token)
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": field}
    page = (await api.ok(CONTACTS, {"first": 10}, token=account.token))["me"]["contacts"]
    assert [e["node"]["name"] for e in page["edges"]] == ["Kept"]


async def test_limits_are_inclusive(api: Api, account: Account) -> None:
    contacts = [{"networkId": "+447912345678", "name": "n" * 100}]
    sync = (await api.ok(UPLOAD, {"network": "tel", "contacts": contacts}, token=account.token))[
        "uploadContacts"
    ]
    assert sync["contacts"][0]["name"] == "n" * 100


@pytest.mark.parametrize(
    ("variables", "code", "field"),
    [
        ({"first": 101}, "QUERY_TOO_COMPLEX", "first"),
        ({"first": -1}, "BAD_USER_INPUT", "first"),
        ({"after": "not a cursor"}, "BAD_USER_INPUT", "after"),
        ({"after": "eyJuIjoidGVsIn0"}, "BAD_USER_INPUT", "after"),  # {"n":"tel"}: no hash
        ({"after": "eyJuIjoieCIsImgiOiIwMCJ9"}, "BAD_USER_INPUT", "after"),  # unknown network, short hash
        ({"network": "icq"}, "BAD_USER_INPUT", "network"),
    ],
)
async def test_contacts_page_arguments(
    api: Api, account: Account, variables: dict[str, Any], code: str, field: str
) -> None:
    error = await api.error(CONTACTS, variables, token=account.token)
    assert error["extensions"]["code"] == code
    assert error["extensions"].get("field") == field


async def test_a_cursor_of_one_network_does_not_page_another(api: Api) -> None:
    account = await api.sign_up("curs")
    contacts = [{"networkId": fresh_phone()} for _ in range(3)]
    await api.ok(UPLOAD, {"network": "tel", "contacts": contacts}, token=account.token)
    page = (await api.ok(CONTACTS, {"first": 1, "network": "tel"}, token=account.token))["me"]["contacts"]
    cursor = page["pageInfo"]["endCursor"]
    error = await api.error(CONTACTS, {"after": cursor, "network": "email"}, token=account.token)
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "after"}
    rest = (await api.ok(CONTACTS, {"after": cursor}, token=account.token))["me"]["contacts"]
    assert len(rest["edges"]) == 2


async def test_signed_out_callers_are_unauthenticated(api: Api) -> None:
    link = await api.error(LINK, {"network": "tel", "networkId": "+447912345678", "code": "123456"})
    assert link["extensions"]["code"] == "UNAUTHENTICATED"
    upload = await api.error(UPLOAD, {"network": "tel", "contacts": []})
    assert upload["extensions"]["code"] == "UNAUTHENTICATED"
    assert (await api.ok(CONTACTS))["me"] is None
    async with api.websocket() as session:
        from gql import GraphQLRequest
        from gql.transport.exceptions import TransportQueryError

        with pytest.raises(TransportQueryError) as raised:
            async for _ in session.subscribe(GraphQLRequest(DISCOVERED)):
                pass
    assert raised.value.errors is not None
    assert raised.value.errors[0]["extensions"]["code"] == "UNAUTHENTICATED"


@pytest.mark.parametrize(
    ("network", "raw", "country", "expected"),
    [
        ("tel", "+44 (0)79-1234.5678", "", "+447912345678"),
        ("tel", "+44 79 1234 5678", "", "+447912345678"),
        ("tel", "0044 7912/345678", "", "+447912345678"),
        ("tel", "07912 345678", "44", "+447912345678"),
        ("tel", "\t+1 (555) 010-0000 ", "", "+15550100000"),
        ("email", " Ada.Lovelace@Example.COM ", "", "ada.lovelace@example.com"),
        ("fb", "100004123456789", "", "100004123456789"),
    ],
)
def test_normalisation(network: str, raw: str, country: str, expected: str) -> None:
    assert rules.normalise(network, raw, "id", country) == expected


def test_identity_hash_is_keyed_and_network_scoped() -> None:
    tel = Identity("tel", "+447912345678")
    assert identity_hash(b"pepper", tel) == identity_hash(b"pepper", tel)
    assert identity_hash(b"pepper", tel) != identity_hash(b"other", tel)
    assert identity_hash(b"pepper", tel) != identity_hash(b"pepper", Identity("fb", "447912345678"))
    assert len(identity_hash(b"pepper", tel)) == 32


def test_country_code_setting() -> None:
    assert rules.country_code("+31") == "31"
    assert rules.country_code("") == ""
    with pytest.raises(ValueError):
        rules.country_code("031")
    with pytest.raises(BadUserInput):
        rules.network("MySpace")
