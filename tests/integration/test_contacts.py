"""Contact discovery through a real GraphQL client against the real node."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from aiohttp import web

from gateway.contacts.identity import Identity, identity_hash
from gateway.server.app import SERVICES
from tests.conftest import ServerFactory
from tests.support.client import Api
from tests.support.contacts import (
    CONTACTS,
    IDENTITIES,
    LINK,
    UPLOAD,
    all_contacts,
    concurrent_claims_of_one_identity_one_wins,
    discoveries,
    e164,
    fanouts_done,
    fresh_phone,
    indexed_by,
    link,
    linked,
    nothing_arrives,
    request_code,
)
from tests.support.webhook import CodeReceiver


async def upload(api: Api, token: str, network: str, contacts: list[dict[str, Any]]) -> dict[str, Any]:
    data = await api.ok(UPLOAD, {"network": network, "contacts": contacts}, token=token)
    return data["uploadContacts"]


async def test_upload_discovers_users_who_linked_before(api: Api, codes: CodeReceiver) -> None:
    owner = await api.sign_up("own")
    uploader = await api.sign_up("upl")
    phone, stranger = fresh_phone(), fresh_phone()
    identity = await linked(api, codes, owner.token, "TEL", phone)
    assert identity["network"] == "tel"
    assert identity["networkId"] == e164(phone)

    # Written the other way ("00" prefix, dashes): still the same identity.
    local_style = "00" + e164(phone)[1:4] + "-" + e164(phone)[4:]
    sync = await upload(
        api,
        uploader.token,
        "tel",
        [{"networkId": local_style, "name": "  Owner  "}, {"networkId": stranger, "name": "Stranger"}],
    )
    assert [c["networkId"] for c in sync["contacts"]] == [e164(phone), e164(stranger)]
    assert sync["contacts"][0]["name"] == "Owner"
    assert sync["contacts"][0]["user"] == {"login": owner.login}
    assert sync["contacts"][0]["discoveredAt"].endswith("Z")
    assert sync["contacts"][1]["user"] is None
    assert sync["contacts"][1]["discoveredAt"] is None
    assert sync["discovered"] == [{"login": owner.login}]

    stored = await all_contacts(api, uploader.token)
    assert {c["networkId"]: (c["user"] or {}).get("login") for c in stored} == {
        e164(phone): owner.login,
        e164(stranger): None,
    }
    # Uploading the same book again: the owner is still shown, but is no news.
    again = await upload(
        api, uploader.token, "tel", [{"networkId": phone, "name": "Owner"}, {"networkId": stranger}]
    )
    assert again["contacts"][0]["user"] == {"login": owner.login}
    assert again["contacts"][0]["discoveredAt"] == sync["contacts"][0]["discoveredAt"]
    assert again["contacts"][1]["name"] is None
    assert again["discovered"] == []


async def test_linking_later_notifies_the_uploaders_only(
    api: Api, app: web.Application, codes: CodeReceiver
) -> None:
    owner = await api.sign_up("late")
    uploader = await api.sign_up("book")
    bystander = await api.sign_up("bystand")
    phone = fresh_phone()
    await upload(api, uploader.token, "tel", [{"networkId": phone, "name": "Late Joiner"}])
    await upload(api, bystander.token, "tel", [{"networkId": fresh_phone(), "name": "Someone else"}])

    async with (
        discoveries(api, app, uploader.login, uploader.token) as uploader_events,
        discoveries(api, app, bystander.login, bystander.token) as bystander_events,
        discoveries(api, app, owner.login, owner.token) as owner_events,
    ):
        await linked(api, codes, owner.token, "tel", phone)
        event = await asyncio.wait_for(uploader_events.get(), timeout=10)
        assert event["network"] == "tel"
        assert event["networkId"] == e164(phone)
        assert event["name"] == "Late Joiner"
        assert event["user"] == {"login": owner.login}
        assert event["discoveredAt"].endswith("Z")
        assert await nothing_arrives(bystander_events)
        assert await nothing_arrives(owner_events)
        # Linking again is harmless and announces nothing twice.
        await linked(api, codes, owner.token, "tel", phone)
        assert await nothing_arrives(uploader_events)

    stored = await all_contacts(api, uploader.token)
    assert stored[0]["user"]["login"] == owner.login
    assert stored[0]["discoveredAt"] == event["discoveredAt"]


async def test_concurrent_claims_of_one_identity_one_wins(api: Api, codes: CodeReceiver) -> None:
    await concurrent_claims_of_one_identity_one_wins(api, api, codes)


async def test_linking_is_idempotent_and_completes_an_interrupted_link(
    api: Api, app: web.Application, codes: CodeReceiver
) -> None:
    owner = await api.sign_up("heal")
    uploader = await api.sign_up("heal2")
    phone = fresh_phone()
    await upload(api, uploader.token, "tel", [{"networkId": phone, "name": "Healed"}])
    # A link that died right after winning its claim: the owners row is there
    # (written, as always, with IF NOT EXISTS), nothing else is.
    directory_settings = app[SERVICES].settings
    digest = identity_hash(directory_settings.contacts_identity_pepper.encode(), Identity("tel", e164(phone)))
    db = app[SERVICES].db
    inserted = await db.execute(
        "INSERT INTO identity_owners (identity_hash, network, login, linked_at)"
        " VALUES (?, 'tel', ?, toTimestamp(now())) IF NOT EXISTS",
        (digest, owner.login),
    )
    assert inserted.applied
    assert (await api.ok(IDENTITIES, token=owner.token))["me"]["identities"] == []
    assert (await all_contacts(api, uploader.token))[0]["user"] is None

    first = await linked(api, codes, owner.token, "tel", phone)
    second = await linked(api, codes, owner.token, "tel", phone)
    assert first == second
    assert (await api.ok(IDENTITIES, token=owner.token))["me"]["identities"] == [first]
    await fanouts_done(app)
    assert (await all_contacts(api, uploader.token))[0]["user"]["login"] == owner.login


async def test_reupload_replaces_the_book_and_the_index_follows(
    api: Api, app: web.Application, codes: CodeReceiver
) -> None:
    uploader = await api.sign_up("reup")
    removed_owner = await api.sign_up("gone")
    kept_owner = await api.sign_up("kept")
    removed, kept, added = fresh_phone(), fresh_phone(), fresh_phone()
    await upload(
        api,
        uploader.token,
        "tel",
        [{"networkId": removed, "name": "Removed"}, {"networkId": kept, "name": "K"}],
    )
    email_book = await upload(
        api, uploader.token, "email", [{"networkId": "friend@example.org", "name": "F"}]
    )
    assert len(email_book["contacts"]) == 1

    second = await upload(
        api,
        uploader.token,
        "tel",
        [{"networkId": kept, "name": "Kept, renamed"}, {"networkId": added, "name": "Added"}],
    )
    assert [c["networkId"] for c in second["contacts"]] == [e164(kept), e164(added)]
    tel_book = await all_contacts(api, uploader.token, "tel")
    assert sorted((c["networkId"], c["name"]) for c in tel_book) == sorted(
        [(e164(kept), "Kept, renamed"), (e164(added), "Added")]
    )
    assert await indexed_by(app, "tel", e164(removed)) == []
    assert await indexed_by(app, "tel", e164(kept)) == [uploader.login]
    assert await indexed_by(app, "tel", e164(added)) == [uploader.login]
    # The other network's book is untouched.
    assert [c["networkId"] for c in await all_contacts(api, uploader.token, "email")] == [
        "friend@example.org"
    ]

    async with discoveries(api, app, uploader.login, uploader.token) as events:
        # The removed contact links: the uploader is not told, and gets no row back.
        await linked(api, codes, removed_owner.token, "tel", removed)
        assert await nothing_arrives(events)
        # The kept one links: discovered (the index followed the rename, not just the removal).
        await linked(api, codes, kept_owner.token, "tel", kept)
        event = await asyncio.wait_for(events.get(), timeout=10)
        assert (event["name"], event["user"]["login"]) == ("Kept, renamed", kept_owner.login)
    tel_book = await all_contacts(api, uploader.token, "tel")
    assert sorted(c["networkId"] for c in tel_book) == sorted([e164(kept), e164(added)])

    # An empty upload clears the book.
    assert (await upload(api, uploader.token, "tel", []))["contacts"] == []
    assert await all_contacts(api, uploader.token, "tel") == []
    assert await indexed_by(app, "tel", e164(added)) == []
    assert len(await all_contacts(api, uploader.token)) == 1


async def test_uploads_racing_links_never_miss_a_discovery(
    api: Api, app: web.Application, codes: CodeReceiver
) -> None:
    """Large books keep each upload busy for a while; the links start one after the
    other during it, so they land before, between and after the upload's index
    writes and owner reads. Whatever the interleaving, every owner is found."""
    uploaders = await asyncio.gather(*(api.sign_up("racer") for _ in range(3)))
    linkers = await asyncio.gather(*(api.sign_up("linker") for _ in range(12)))
    phones = [fresh_phone() for _ in linkers]
    books = []
    for n in range(len(uploaders)):
        filler = [{"networkId": fresh_phone(), "name": "Filler"} for _ in range(1000)]
        # The linkers' numbers come last: the upload indexes them last.
        books.append(filler + [{"networkId": p, "name": "Racer"} for p in phones[n * 4 : n * 4 + 4]])

    async def link_after(delay: float, token: str, phone: str) -> None:
        await asyncio.sleep(delay)
        await linked(api, codes, token, "tel", phone)

    await asyncio.gather(
        *(upload(api, u.token, "tel", b) for u, b in zip(uploaders, books, strict=True)),
        *(link_after(i * 0.1, o.token, p) for i, (o, p) in enumerate(zip(linkers, phones, strict=True))),
    )
    await fanouts_done(app)
    for n, uploader in enumerate(uploaders):
        found = {
            c["networkId"]: c["user"]["login"] for c in await all_contacts(api, uploader.token) if c["user"]
        }
        expected = zip(linkers[n * 4 : n * 4 + 4], phones[n * 4 : n * 4 + 4], strict=True)
        assert found == {e164(p): o.login for o, p in expected}


async def test_duplicates_collapse_and_emails_are_case_insensitive(api: Api, codes: CodeReceiver) -> None:
    owner = await api.sign_up("mail")
    uploader = await api.sign_up("mailbook")
    address = f"{owner.login}@Mail.Example.com"
    await linked(api, codes, owner.token, "email", address.upper())
    sync = await upload(
        api,
        uploader.token,
        "email",
        [
            {"networkId": address, "name": "First spelling"},
            {"networkId": f"  {address.lower()}  ", "name": "Second spelling"},
            {"networkId": "nobody@example.com", "name": "Nobody"},
        ],
    )
    assert [(c["networkId"], c["name"]) for c in sync["contacts"]] == [
        (address.lower(), "First spelling"),
        ("nobody@example.com", "Nobody"),
    ]
    assert sync["discovered"] == [{"login": owner.login}]


async def test_contacts_pages_are_stable_and_cost_the_same_for_5_and_50(
    api: Api, codes: CodeReceiver
) -> None:
    owners = await asyncio.gather(*(api.sign_up("pgown") for _ in range(55)))
    uploader = await api.sign_up("pager")
    phones = [fresh_phone() for _ in owners]
    await asyncio.gather(
        *(linked(api, codes, o.token, "tel", p) for o, p in zip(owners, phones, strict=True))
    )
    await upload(
        api, uploader.token, "tel", [{"networkId": p, "name": f"T{i}"} for i, p in enumerate(phones)]
    )
    emails = [f"friend{i}@example.net" for i in range(30)]
    await upload(api, uploader.token, "email", [{"networkId": e, "name": e} for e in emails])

    seen: list[tuple[str, str]] = []
    after = None
    while True:
        page = (await api.ok(CONTACTS, {"first": 40, "after": after}, token=uploader.token))["me"]["contacts"]
        seen.extend((e["node"]["network"], e["node"]["networkId"]) for e in page["edges"])
        assert page["pageInfo"]["endCursor"] == (page["edges"][-1]["cursor"] if page["edges"] else None)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert len(seen) == len(set(seen)) == 85
    assert [n for n, _ in seen] == ["email"] * 30 + ["tel"] * 55
    assert {i for _, i in seen} == {e164(p) for p in phones} | set(emails)

    # Every tel contact has a different owner: the users come through one batched read.
    small = await api.call(CONTACTS, {"first": 5, "network": "tel"}, token=uploader.token)
    large = await api.call(CONTACTS, {"first": 50, "network": "tel"}, token=uploader.token)
    assert small.data is not None and large.data is not None
    large_users = [e["node"]["user"]["login"] for e in large.data["me"]["contacts"]["edges"]]
    assert len(set(large_users)) == 50
    assert set(large_users) <= {o.login for o in owners}
    assert len(small.data["me"]["contacts"]["edges"]) == 5
    assert small.statements == large.statements


async def test_a_leftover_discovery_row_is_hidden_and_the_next_upload_removes_it(
    api: Api, app: web.Application
) -> None:
    uploader = await api.sign_up("left")
    phone = fresh_phone()
    await upload(api, uploader.token, "tel", [{"networkId": phone, "name": "Stays"}])
    # What a link leaves when it records a discovery on a row being removed at
    # that very moment: a row with only the owner columns.
    db = app[SERVICES].db
    ghost = b"\x01" * 32
    await db.execute(
        "UPDATE contact_books SET owner = 'someone', discovered_at = toTimestamp(now())"
        " WHERE login = ? AND network = 'tel' AND identity_hash = ?",
        (uploader.login, ghost),
    )
    assert [c["networkId"] for c in await all_contacts(api, uploader.token)] == [e164(phone)]
    await upload(api, uploader.token, "tel", [{"networkId": phone, "name": "Stays"}])
    rows = await db.execute_all("SELECT identity_hash FROM contact_books WHERE login = ?", (uploader.login,))
    assert ghost not in [bytes(r["identity_hash"]) for r in rows]
    assert len(rows) == 1


async def test_one_upload_per_book_at_a_time(api: Api, app: web.Application) -> None:
    uploader = await api.sign_up("lease")
    db = app[SERVICES].db
    # A lease left by an upload whose process died: it expires by TTL.
    await db.execute(
        "INSERT INTO contact_upload_leases (login, network, upload_id, started_at)"
        " VALUES (?, 'tel', uuid(), toTimestamp(now())) IF NOT EXISTS USING TTL 2",
        (uploader.login,),
    )
    blocked = await api.error(UPLOAD, {"network": "tel", "contacts": []}, token=uploader.token)
    assert blocked["extensions"] == {"code": "CONFLICT", "field": "network"}
    # Other networks' books are not blocked.
    await upload(api, uploader.token, "email", [{"networkId": "a@example.com"}])
    await asyncio.sleep(2.5)
    await upload(api, uploader.token, "tel", [{"networkId": fresh_phone()}])

    # Concurrent uploads from several devices: each is all-or-nothing, never a mix.
    books = [[{"networkId": fresh_phone(), "name": f"Device {d}"} for _ in range(40)] for d in range(6)]
    responses = await asyncio.gather(
        *(api.call(UPLOAD, {"network": "tel", "contacts": b}, token=uploader.token) for b in books)
    )
    assert all(r.codes in ([], ["CONFLICT"]) for r in responses)
    succeeded = [b for b, r in zip(books, responses, strict=True) if not r.errors]
    assert succeeded
    final = sorted(c["networkId"] for c in await all_contacts(api, uploader.token, "tel"))
    assert final in [sorted(e164(c["networkId"]) for c in b) for b in succeeded]


async def test_identities_limit_and_networks(api: Api, codes: CodeReceiver) -> None:
    user = await api.sign_up("many")
    base = uuid.uuid4().int % 10**12
    for i in range(20):
        await linked(api, codes, user.token, "fb", f"{base}{i:02d}")
    too_many = await link(api, codes, user.token, "tel", fresh_phone())
    assert too_many.errors[0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "networkId"}
    listed = (await api.ok(IDENTITIES, token=user.token))["me"]["identities"]
    assert len(listed) == 20
    assert {i["network"] for i in listed} == {"fb"}
    # Re-linking one already held is still fine at the limit.
    await linked(api, codes, user.token, "fb", listed[0]["networkId"])


async def test_racing_links_never_exceed_the_identity_limit(api: Api, codes: CodeReceiver) -> None:
    """Links of one user at once, each with its own valid code: the count each checks
    cannot change under it, so exactly the limit of them succeed."""
    user = await api.sign_up("racer")
    base = uuid.uuid4().int % 10**12
    ids = [f"{base}{i:02d}" for i in range(26)]
    variables = []
    for network_id in ids:
        code = await request_code(api, codes, user.token, "fb", network_id)
        variables.append({"network": "fb", "networkId": network_id, "code": code})
    responses = await asyncio.gather(*(api.call(LINK, v, token=user.token) for v in variables))
    refused = [r.errors[0]["extensions"] for r in responses if r.errors]
    assert sum(1 for r in responses if not r.errors) == 20
    assert refused == [{"code": "BAD_USER_INPUT", "field": "networkId"}] * 6
    listed = (await api.ok(IDENTITIES, token=user.token))["me"]["identities"]
    assert len(listed) == 20


async def test_national_numbers_use_the_configured_country_code(api: Api, make_server: ServerFactory) -> None:
    dutch_api, _ = await make_server(contacts_default_country_code="+31")
    user = await dutch_api.sign_up("nl")
    sync = await upload(dutch_api, user.token, "tel", [{"networkId": "06-1234 5678", "name": "Mobile"}])
    assert sync["contacts"][0]["networkId"] == "+31612345678"
    rejected = await api.error(
        UPLOAD, {"network": "tel", "contacts": [{"networkId": "06-1234 5678"}]}, token=user.token
    )
    assert rejected["extensions"] == {"code": "BAD_USER_INPUT", "field": "contacts[0].networkId"}


async def test_identity_tables_hold_hashes_not_numbers(
    api: Api, app: web.Application, codes: CodeReceiver
) -> None:
    owner = await api.sign_up("priv")
    uploader = await api.sign_up("privbook")
    phone = fresh_phone()
    await linked(api, codes, owner.token, "tel", phone)
    await upload(api, uploader.token, "tel", [{"networkId": phone, "name": "Private"}])
    settings = app[SERVICES].settings
    digest = identity_hash(settings.contacts_identity_pepper.encode(), Identity("tel", e164(phone)))
    db = app[SERVICES].db
    claim = (await db.execute("SELECT * FROM identity_owners WHERE identity_hash = ?", (digest,))).one()
    assert claim is not None and claim["login"] == owner.login
    index = await db.execute_all("SELECT * FROM contact_index WHERE identity_hash = ?", (digest,))
    assert [r["login"] for r in index] == [uploader.login]
    digits = e164(phone)[1:]
    for row in [claim, *index]:
        assert all(digits not in str(value) for value in row.values())
    # Without the pepper the hash cannot be recomputed from the number.
    assert digest != identity_hash(b"", Identity("tel", e164(phone)))


async def test_demo_seed_is_idempotent(api: Api, app: web.Application) -> None:
    from gateway.contacts.seed import seed_contacts
    from gateway.users.seed import DEMO_PASSWORD, seed_users

    services = app[SERVICES]
    await seed_users(services.db, services.settings)
    first = await seed_contacts(services.db, services.settings)
    second = await seed_contacts(services.db, services.settings)
    assert (
        first
        == second
        == ["bob:tel:+31612345601", "carol:tel:+31612345602", "erin:email:erin.brockovich@example.com"]
    )
    sign_in = """mutation($login: String!, $password: String!) {
      signIn(login: $login, password: $password) { token }
    }"""
    token = (await api.ok(sign_in, {"login": "alice", "password": DEMO_PASSWORD}))["signIn"]["token"]
    alice_book = {c["name"]: (c["user"] or {}).get("login") for c in await all_contacts(api, token)}
    assert alice_book == {
        "Bob (builder)": "bob",
        "Carol D.": "carol",
        "Mad Hatter": None,
        "White Rabbit": None,
    }
