"""Mail through the real GraphQL client: folders, sending, reading, moving, unread counts."""

from __future__ import annotations

import asyncio
import uuid

from tests.support.client import Api
from tests.support.ids import key
from tests.support.mail_helpers import (
    CREATE_FOLDER,
    EMAIL,
    FOLDER,
    FOLDERS,
    MARK,
    MOVE,
    SEND,
    email_input,
    folder_ids,
    send,
    unread_counts,
)


async def test_every_user_has_inbox_and_sent_and_can_add_folders(api: Api) -> None:
    alice = await api.sign_up("fold")
    data = await api.ok(FOLDERS, token=alice.token)
    assert [f["label"] for f in data["me"]["folders"]] == ["inbox", "sent"]
    assert all(f["unreadCount"] == 0 for f in data["me"]["folders"])

    created = await api.ok(CREATE_FOLDER, {"label": "Work", "color": "#FF8800"}, token=alice.token)
    assert created["createFolder"] == {"label": "work", "color": "#ff8800", "unreadCount": 0}
    default = await api.ok(CREATE_FOLDER, {"label": "a_b-2"}, token=alice.token)
    assert default["createFolder"]["color"].startswith("#")
    labels = [f["label"] for f in (await api.ok(FOLDERS, token=alice.token))["me"]["folders"]]
    assert labels == ["inbox", "sent", "a_b-2", "work"]

    for label in ("work", "inbox", "sent"):
        error = await api.error(CREATE_FOLDER, {"label": label}, token=alice.token)
        assert error["extensions"] == {"code": "CONFLICT", "field": "label"}
    # Folders are per user.
    bob = await api.sign_up("fold")
    assert (await api.ok(CREATE_FOLDER, {"label": "work"}, token=bob.token))["createFolder"][
        "label"
    ] == "work"


async def test_folder_arguments_are_validated(api: Api) -> None:
    alice = await api.sign_up("foldv")
    for label in ("", "-x", "a" * 31, "has space", "slash/x", "ünï"):
        error = await api.error(CREATE_FOLDER, {"label": label}, token=alice.token)
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "label"}, label
    for color in ("red", "#12345", "#1234567", "#ggg000", ""):
        error = await api.error(CREATE_FOLDER, {"label": "ok", "color": color}, token=alice.token)
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "color"}, color
    assert (await api.error(CREATE_FOLDER, {"label": "ok"}))["extensions"]["code"] == "UNAUTHENTICATED"
    missing = await api.ok(FOLDER, {"label": "nope"}, token=alice.token)
    assert missing["me"]["folder"] is None
    assert (await api.ok(FOLDER, {"label": "Bad Label!"}, token=alice.token))["me"]["folder"] is None


async def test_concurrent_creates_of_one_folder_make_one(api: Api) -> None:
    alice = await api.sign_up("foldc")
    responses = await asyncio.gather(
        *(api.call(CREATE_FOLDER, {"label": "race"}, token=alice.token) for _ in range(8))
    )
    assert sorted(r.codes[0] if r.errors else "ok" for r in responses) == ["CONFLICT"] * 7 + ["ok"]


async def test_send_inbox_sent_read_flow_with_exact_counts(api: Api) -> None:
    alice, bob, carol = [await api.sign_up(p) for p in ("alice", "bob", "carol")]

    sent = await send(api, alice, [bob.login, carol.login.upper(), bob.login], "Lunch?", body="At noon.")
    assert sent["from"] == {"login": alice.login}
    assert [u["login"] for u in sent["to"]] == [bob.login, carol.login]  # normalised, deduplicated
    assert (sent["read"], sent["folder"], sent["attachments"]) == (True, "sent", [])
    assert sent["sentAt"].endswith("Z")
    second = await send(api, alice, [bob.login], "Dessert?")

    assert await unread_counts(api, bob) == {"inbox": 2, "sent": 0}
    assert await unread_counts(api, carol) == {"inbox": 1, "sent": 0}
    assert await unread_counts(api, alice) == {"inbox": 0, "sent": 0}
    assert await folder_ids(api, bob, "inbox") == [key(second["id"]), key(sent["id"])]  # newest first
    assert await folder_ids(api, alice, "sent") == [key(second["id"]), key(sent["id"])]
    assert await folder_ids(api, alice, "inbox") == []

    inbox = await api.ok(FOLDER, {"label": "inbox"}, token=bob.token)
    node = inbox["me"]["folder"]["emails"]["edges"][1]["node"]
    assert node["subject"] == "Lunch?" and node["read"] is False and node["hasAttachments"] is False
    assert node["from"]["login"] == alice.login

    as_bob = (await api.ok(EMAIL, {"id": sent["id"]}, token=bob.token))["me"]["email"]
    assert (as_bob["body"], as_bob["read"], as_bob["folder"]) == ("At noon.", False, "inbox")
    assert (await api.ok(EMAIL, {"id": sent["id"]}, token=alice.token))["me"]["email"]["folder"] == "sent"

    marked = await api.ok(MARK, {"id": sent["id"]}, token=bob.token)
    assert key(marked["markEmailRead"]["id"]) == key(sent["id"])
    assert marked["markEmailRead"] == {"id": marked["markEmailRead"]["id"], "read": True, "folder": "inbox"}
    assert await unread_counts(api, bob) == {"inbox": 1, "sent": 0}
    assert (await api.ok(MARK, {"id": sent["id"]}, token=bob.token))["markEmailRead"]["read"] is True
    assert await unread_counts(api, bob) == {"inbox": 1, "sent": 0}  # a repeated mark moves nothing
    inbox = await api.ok(FOLDER, {"label": "inbox"}, token=bob.token)
    assert [e["node"]["read"] for e in inbox["me"]["folder"]["emails"]["edges"]] == [False, True]
    assert inbox["me"]["folder"]["unreadCount"] == 1

    await api.ok(MARK, {"id": sent["id"], "read": False}, token=bob.token)
    assert await unread_counts(api, bob) == {"inbox": 2, "sent": 0}
    # Carol's copy is her own: Bob's marks do not touch it.
    assert (await api.ok(EMAIL, {"id": sent["id"]}, token=carol.token))["me"]["email"]["read"] is False


async def test_marking_read_many_times_at_once_moves_the_counter_once(api: Api) -> None:
    alice, bob = await api.sign_up("mra"), await api.sign_up("mrb")
    emails = [await send(api, alice, [bob.login], f"n{i}") for i in range(3)]
    assert (await unread_counts(api, bob))["inbox"] == 3

    responses = await asyncio.gather(
        *(api.call(MARK, {"id": emails[0]["id"]}, token=bob.token) for _ in range(10))
    )
    assert all(not r.errors and r.result["markEmailRead"]["read"] for r in responses)
    assert (await unread_counts(api, bob))["inbox"] == 2

    # Read and unread racing: whatever order they apply in, the count matches the final flag.
    flips = [api.call(MARK, {"id": emails[1]["id"], "read": i % 2 == 0}, token=bob.token) for i in range(10)]
    assert all(not r.errors for r in await asyncio.gather(*flips))
    final = (await api.ok(EMAIL, {"id": emails[1]["id"]}, token=bob.token))["me"]["email"]["read"]
    assert (await unread_counts(api, bob))["inbox"] == (1 if final else 2)
    listed = {e: r for e, r in zip(await folder_ids(api, bob, "inbox"), [None] * 3, strict=True)}
    inbox = await api.ok(FOLDER, {"label": "inbox"}, token=bob.token)
    flags = {key(e["node"]["id"]): e["node"]["read"] for e in inbox["me"]["folder"]["emails"]["edges"]}
    assert flags.keys() == listed.keys()
    assert flags[key(emails[1]["id"])] is final  # the listing agrees with the email


async def test_move_between_folders_takes_the_unread_count_along(api: Api) -> None:
    alice, bob = await api.sign_up("mva"), await api.sign_up("mvb")
    await api.ok(CREATE_FOLDER, {"label": "work"}, token=bob.token)
    unread = await send(api, alice, [bob.login], "unread one")
    read = await send(api, alice, [bob.login], "read one")
    await api.ok(MARK, {"id": read["id"]}, token=bob.token)
    assert await unread_counts(api, bob) == {"inbox": 1, "sent": 0, "work": 0}

    moved = await api.ok(MOVE, {"id": unread["id"], "from": "inbox", "to": "work"}, token=bob.token)
    assert key(moved["moveEmail"]["id"]) == key(unread["id"])
    assert {k: v for k, v in moved["moveEmail"].items() if k != "id"} == {"read": False, "folder": "work"}
    assert await unread_counts(api, bob) == {"inbox": 0, "sent": 0, "work": 1}
    await api.ok(MOVE, {"id": read["id"], "from": "inbox", "to": "work"}, token=bob.token)
    assert await unread_counts(api, bob) == {"inbox": 0, "sent": 0, "work": 1}
    assert await folder_ids(api, bob, "inbox") == []
    assert await folder_ids(api, bob, "work") == [key(read["id"]), key(unread["id"])]

    # Reading it in its new folder moves that folder's count.
    await api.ok(MARK, {"id": unread["id"]}, token=bob.token)
    assert await unread_counts(api, bob) == {"inbox": 0, "sent": 0, "work": 0}
    await api.ok(MARK, {"id": unread["id"], "read": False}, token=bob.token)
    back = await api.ok(MOVE, {"id": unread["id"], "from": "work", "to": "inbox"}, token=bob.token)
    assert back["moveEmail"]["folder"] == "inbox"
    assert await unread_counts(api, bob) == {"inbox": 1, "sent": 0, "work": 0}
    # A repeated move is harmless; a move from the wrong folder names `from`.
    again = await api.ok(MOVE, {"id": unread["id"], "from": "work", "to": "inbox"}, token=bob.token)
    assert again["moveEmail"]["folder"] == "inbox"
    wrong = await api.error(MOVE, {"id": read["id"], "from": "inbox", "to": "sent"}, token=bob.token)
    assert wrong["extensions"] == {"code": "NOT_FOUND", "field": "from"}
    missing = await api.error(MOVE, {"id": read["id"], "from": "work", "to": "nope"}, token=bob.token)
    assert missing["extensions"] == {"code": "NOT_FOUND", "field": "to"}
    bad = await api.error(MOVE, {"id": read["id"], "from": "work", "to": "No Way"}, token=bob.token)
    assert bad["extensions"] == {"code": "BAD_USER_INPUT", "field": "to"}
    # The sender's copy never moved.
    assert (await api.ok(EMAIL, {"id": unread["id"]}, token=alice.token))["me"]["email"]["folder"] == "sent"


async def test_concurrent_moves_of_one_email_apply_once(api: Api) -> None:
    alice, bob = await api.sign_up("cma"), await api.sign_up("cmb")
    for label in ("one", "two"):
        await api.ok(CREATE_FOLDER, {"label": label}, token=bob.token)
    email = await send(api, alice, [bob.login], "contested")
    responses = await asyncio.gather(
        *(
            api.call(MOVE, {"id": email["id"], "from": "inbox", "to": t}, token=bob.token)
            for t in ["one", "two"] * 4
        )
    )
    winners = {r.result["moveEmail"]["folder"] for r in responses if not r.errors}
    assert len(winners) == 1
    assert all(r.codes == ["NOT_FOUND"] for r in responses if r.errors)
    counts = await unread_counts(api, bob)
    assert counts == {"inbox": 0, "sent": 0, "one": 0, "two": 0, **{winners.pop(): 1}}
    listed = [await folder_ids(api, bob, label) for label in ("inbox", "one", "two")]
    assert sum(len(ids) for ids in listed) == 1


async def test_only_participants_see_an_email(api: Api) -> None:
    alice, bob, eve = await api.sign_up("pa"), await api.sign_up("pb"), await api.sign_up("pe")
    email = await send(api, alice, [bob.login], "private")
    assert (await api.ok(EMAIL, {"id": email["id"]}, token=eve.token))["me"]["email"] is None
    for guess in (str(uuid.uuid1()), str(uuid.uuid4()), "not-an-id", ""):
        assert (await api.ok(EMAIL, {"id": guess}, token=bob.token))["me"]["email"] is None
    assert (await api.ok(EMAIL, {"id": email["id"]}))["me"] is None

    for op, variables in (
        (MARK, {"id": email["id"]}),
        (MOVE, {"id": email["id"], "from": "inbox", "to": "sent"}),
        (MARK, {"id": str(uuid.uuid1())}),
    ):
        error = await api.error(op, variables, token=eve.token)
        assert error["extensions"] == {"code": "NOT_FOUND", "field": "id"}
    malformed = await api.error(MARK, {"id": "nope"}, token=bob.token)
    assert malformed["extensions"] == {"code": "BAD_USER_INPUT", "field": "id"}
    assert (await api.error(MARK, {"id": email["id"]}))["extensions"]["code"] == "UNAUTHENTICATED"
    assert await unread_counts(api, eve) == {"inbox": 0, "sent": 0}


async def test_send_validation_names_the_field(api: Api) -> None:
    alice = await api.sign_up("sv")
    bob = await api.sign_up("sv")
    cases = [
        (email_input([]), "to"),
        (email_input(["Not A Login!"]), "to"),
        (email_input([f"u{i:03d}" for i in range(101)]), "to"),
        (email_input([bob.login], subject="s" * 201), "subject"),
        (email_input([bob.login], body="b" * 100_001), "body"),
        (email_input([bob.login], attachments=["not a file"]), "attachments"),
    ]
    for variables, field in cases:
        error = await api.error(SEND, variables, token=alice.token)
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": field}, (field, error)

    unknown = await api.error(SEND, email_input([bob.login, "ghost-one", "ghost-two"]), token=alice.token)
    assert unknown["extensions"] == {"code": "BAD_USER_INPUT", "field": "to"}
    assert "ghost-one" in unknown["message"] and "ghost-two" in unknown["message"]
    assert bob.login not in unknown["message"]
    assert (await api.error(SEND, email_input([bob.login])))["extensions"]["code"] == "UNAUTHENTICATED"
    # Nothing of the refused sends was stored.
    assert await unread_counts(api, bob) == {"inbox": 0, "sent": 0}
    assert await folder_ids(api, alice, "sent") == []


async def test_sending_to_yourself_files_it_once_in_sent(api: Api) -> None:
    alice, bob = await api.sign_up("self"), await api.sign_up("selfb")
    email = await send(api, alice, [alice.login, bob.login], "note to self")
    assert [u["login"] for u in email["to"]] == [alice.login, bob.login]
    assert await folder_ids(api, alice, "sent") == [key(email["id"])]
    assert await folder_ids(api, alice, "inbox") == []
    assert await unread_counts(api, alice) == {"inbox": 0, "sent": 0}
    assert await unread_counts(api, bob) == {"inbox": 1, "sent": 0}


async def test_one_hundred_recipients_each_get_it(api: Api) -> None:
    alice = await api.sign_up("many")
    recipients = await asyncio.gather(*(api.sign_up("rcpt") for _ in range(100)))
    email = await send(api, alice, [r.login for r in recipients], "all hands")
    assert len(email["to"]) == 100
    counts = await asyncio.gather(*(unread_counts(api, r) for r in recipients))
    assert all(c == {"inbox": 1, "sent": 0} for c in counts)
    inboxes = await asyncio.gather(*(folder_ids(api, r, "inbox") for r in recipients[::17]))
    assert all(ids == [key(email["id"])] for ids in inboxes)
