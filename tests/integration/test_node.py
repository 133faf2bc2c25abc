"""Object identification: every cached object has an id, and ``Query.node`` fetches the Node types again."""

from __future__ import annotations

import base64

from graphql import GraphQLNonNull, GraphQLObjectType, GraphQLScalarType

from gateway.schema import build_schema
from tests.support.client import Api, unique_login

#: Types that are no entities: roots, connections and their edges, page info, mutation results.
# Values and events: a cache keeps them inside the object that holds them (a user's
# presence), or they are news that is never cached (a receipt, someone typing).
NOT_ENTITIES = {
    "Query", "Mutation", "Subscription", "PageInfo", "AuthPayload", "ContactSync",
    "Presence", "PresenceEvent", "ReadReceipt", "TypingEvent",
}  # fmt: skip
NODE_TYPES = {
    "User", "Me", "Room", "Post", "Folder", "TalkPartner",
    "Conversation", "DirectMessage", "RoomMessage", "Email", "Comment",
}  # fmt: skip

NODE = """
query($id: ID!) {
  node(id: $id) {
    __typename id
    ... on User { login }
    ... on Me { user { login } }
    ... on Room { name }
    ... on Post { slug }
    ... on Folder { label unreadCount }
    ... on TalkPartner { partner { login } unreadCount }
    ... on Conversation { with { login } }
    ... on DirectMessage { content }
    ... on RoomMessage { content }
    ... on Email { subject }
    ... on Comment { text }
  }
}
"""


def test_every_entity_has_an_id_and_the_keyed_ones_are_nodes() -> None:
    schema = build_schema()._schema
    entities = [
        t
        for name, t in schema.type_map.items()
        if isinstance(t, GraphQLObjectType)
        and not name.startswith("__")
        and name not in NOT_ENTITIES
        and not name.endswith(("Connection", "Edge"))
    ]
    assert len(entities) >= 15
    for entity in entities:
        field = entity.fields.get("id")
        assert field is not None, f"{entity.name} has no id"
        assert isinstance(field.type, GraphQLNonNull)
        assert isinstance(field.type.of_type, GraphQLScalarType) and field.type.of_type.name == "ID"
    nodes = {t.name for t in entities if any(i.name == "Node" for i in t.interfaces)}
    assert nodes == NODE_TYPES


async def test_node_fetches_each_node_type_by_the_id_it_carries(api: Api) -> None:
    alice = await api.sign_up("nodea")
    bob = await api.sign_up("nodeb")
    room = f"room{unique_login()[:20]}"
    slug = f"node-{unique_login()}"
    created = await api.ok(
        """mutation($room: String!, $slug: String!, $to: String!) {
          createRoom(name: $room) { id name }
          publishPost(input: {slug: $slug, title: "t", body: "b"}) { id slug }
          createFolder(label: "bills") { id label }
          sendMessage(to: $to, content: "hi") { id content conversation { id } }
          sendEmail(input: {to: [$to], subject: "subject one", body: "b"}) { id subject }
        }""",
        {"room": room, "slug": slug, "to": bob.login},
        token=alice.token,
    )
    posted = await api.ok(
        'mutation($room: String!) { postRoomMessage(room: $room, content: "in the room") { id content } }',
        {"room": room},
        token=alice.token,
    )
    commented = await api.ok(
        """mutation($slug: String!) {
          addComment(slug: $slug, input: {name: "n", email: "n@example.com", text: "a comment"}) { id text }
        }""",
        {"slug": slug},
    )
    ids = await api.ok(
        """{ me { id user { id login } talkPartners { nodes { id partner { login } } } } }""",
        token=alice.token,
    )
    expected = {
        ids["me"]["id"]: ("Me", alice.login),
        ids["me"]["user"]["id"]: ("User", alice.login),
        created["createRoom"]["id"]: ("Room", room),
        created["publishPost"]["id"]: ("Post", created["publishPost"]["slug"]),
        created["createFolder"]["id"]: ("Folder", "bills"),
        ids["me"]["talkPartners"]["nodes"][0]["id"]: ("TalkPartner", bob.login),
        created["sendMessage"]["conversation"]["id"]: ("Conversation", bob.login),
        created["sendMessage"]["id"]: ("DirectMessage", "hi"),
        created["sendEmail"]["id"]: ("Email", "subject one"),
        posted["postRoomMessage"]["id"]: ("RoomMessage", "in the room"),
        commented["addComment"]["id"]: ("Comment", "a comment"),
    }
    assert len(expected) == 11
    for node_id, (type_name, key) in expected.items():
        node = (await api.ok(NODE, {"id": node_id}, token=alice.token))["node"]
        assert node is not None, type_name
        assert node["__typename"] == type_name and node["id"] == node_id
        shown = (
            node.get("login")
            or node.get("name")
            or node.get("slug")
            or node.get("label")
            or node.get("content")
            or node.get("subject")
            or node.get("text")
            or (node.get("user") or node.get("partner") or node.get("with") or {}).get("login")
        )
        assert shown == key
        assert base64.b64decode(node_id).decode().startswith(f"{type_name}:")


async def test_node_of_what_is_anothers_own_is_null(api: Api) -> None:
    alice = await api.sign_up("nodec")
    bob = await api.sign_up("noded")
    await api.ok(
        """mutation($to: String!) {
          createFolder(label: "mine") { id }
          sendMessage(to: $to, content: "x") { id }
        }""",
        {"to": bob.login},
        token=alice.token,
    )
    own = await api.ok(
        """{ me { id folders { id label } talkPartners { nodes { id conversation { id
          messages(first: 1) { nodes { id } } } } } } }""",
        token=alice.token,
    )
    partner = own["me"]["talkPartners"]["nodes"][0]
    private = [own["me"]["id"], partner["id"], partner["conversation"]["id"]]
    private += [f["id"] for f in own["me"]["folders"]]
    assert len(private) == 6
    message = partner["conversation"]["messages"]["nodes"][0]["id"]  # bob may see it: he is a party
    assert (await api.ok(NODE, {"id": message}, token=alice.token))["node"] is not None
    assert (await api.ok(NODE, {"id": message}))["node"] is None
    for node_id in private:
        assert (await api.ok(NODE, {"id": node_id}, token=alice.token))["node"] is not None
        assert (await api.ok(NODE, {"id": node_id}, token=bob.token))["node"] is None
        assert (await api.ok(NODE, {"id": node_id}))["node"] is None
    # Public ones are anyone's.
    user_id = (await api.ok("{ me { user { id } } }", token=alice.token))["me"]["user"]["id"]
    assert (await api.ok(NODE, {"id": user_id}))["node"]["login"] == alice.login


async def test_node_of_a_missing_or_unknown_id_is_null_and_a_malformed_one_is_bad_input(api: Api) -> None:
    def encode(raw: str) -> str:
        return base64.b64encode(raw.encode()).decode()

    for raw in ["User:nobody-here", "Room:no-such-room", "Post:no-such-post", "Comment:x", "TalkPartner:a"]:
        assert (await api.ok(NODE, {"id": encode(raw)}))["node"] is None, raw
    for bad in ["not base64!", encode("no-colon"), encode(":x"), "A" * 2000]:
        error = await api.error(NODE, {"id": bad})
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert error["extensions"]["field"] == "id"


async def test_mark_conversation_read_answers_both_counts_under_the_ids_clients_cache(api: Api) -> None:
    alice = await api.sign_up("nodee")
    bob = await api.sign_up("nodef")
    for text in ["one", "two"]:
        await api.ok(
            """mutation($to: String!, $c: String!) { sendMessage(to: $to, content: $c) { id } }""",
            {"to": bob.login, "c": text},
            token=alice.token,
        )
    before = await api.ok(
        """query($w: String!) {
          me { talkPartners { nodes { id unreadCount conversation { id unreadCount } } } }
          conversation: me { conversation(with: $w) { id unreadCount } }
        }""",
        {"w": alice.login},
        token=bob.token,
    )
    [partner] = before["me"]["talkPartners"]["nodes"]
    assert partner["unreadCount"] == partner["conversation"]["unreadCount"] == 2
    assert before["conversation"]["conversation"] == partner["conversation"]
    marked = await api.ok(
        """mutation($w: String!) {
          markConversationRead(with: $w) { id unreadCount conversation { id unreadCount } }
        }""",
        {"w": alice.login},
        token=bob.token,
    )
    result = marked["markConversationRead"]
    assert result["id"] == partner["id"]
    assert result["conversation"]["id"] == partner["conversation"]["id"]
    assert result["unreadCount"] == result["conversation"]["unreadCount"] == 0
