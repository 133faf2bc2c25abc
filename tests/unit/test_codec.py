"""Every event a domain publishes survives the broker's codec unchanged; nothing else passes."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

import pytest

from gateway.broker.codec import EventCodec, UnknownEvent
from gateway.contacts.events import Discovery
from gateway.contacts.records import JobKey
from gateway.db.clock import new_timeuuid
from gateway.messenger.records import MessageRecord
from gateway.rooms.events import RoomEvent, RoomEventKind
from gateway.rooms.records import RoomMessageRecord, RoomRecord
from gateway.schema import event_codec
from gateway.users.records import UserProfile, UserRecord


@pytest.fixture
def codec() -> EventCodec:
    return event_codec()


def _room_event(kind: RoomEventKind, author: str | None) -> RoomEvent:
    room = RoomRecord(
        name="lobby",
        id=uuid.uuid4(),
        creator_login="alice",
        created_at=datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        banner=None,
    )
    message = RoomMessageRecord("lobby", room.id, new_timeuuid(), author, "hi é 🎉", author is None)
    profile = None if author is None else UserProfile.of(_user(author))
    return RoomEvent(kind, message, room, "bob", profile)


def _user(login: str) -> UserRecord:
    return UserRecord(
        login=login,
        firstname="Bob",
        lastname="Ébène",
        email=f"{login}@example.com",
        bio="writes 🎉",
        created_at=datetime(2025, 5, 6, 7, 8, 9, 123000, tzinfo=UTC),
        password_hash="$argon2id$v=19$secret",
    )


@pytest.mark.parametrize(
    "event",
    [
        _room_event(RoomEventKind.MESSAGE, "bob"),
        _room_event(RoomEventKind.DELETED, None),
        Discovery("tel", bytes(range(32)), "carol"),
        JobKey(bytes(range(32)), "erin"),
        MessageRecord(new_timeuuid(), "alice", "bob", "hello", "key-1").to_event(),
        MessageRecord(new_timeuuid(), "bob", "alice", "hi", None).to_event([UserProfile.of(_user("bob"))]),
    ],
)
def test_round_trip(codec: EventCodec, event: object) -> None:
    data = codec.encode(event)
    assert isinstance(data, bytes)
    assert codec.decode(data) == event


def test_a_room_event_carries_its_authors_public_profile_and_nothing_private(codec: EventCodec) -> None:
    event = _room_event(RoomEventKind.MESSAGE, "bob")
    data = codec.encode(event)
    assert b"Bob" in data and b"writes" in data.decode().encode()
    assert b"example.com" not in data and b"argon2" not in data
    decoded = codec.decode(data)
    assert isinstance(decoded, RoomEvent) and decoded.author == event.author


def test_a_room_event_from_a_process_that_carried_no_author_still_decodes(codec: EventCodec) -> None:
    event = _room_event(RoomEventKind.MESSAGE, "bob")
    carried = codec.encode(dataclasses.replace(event, author=None))
    older = carried.replace(b',"author":null', b"")
    assert older != carried and b'author":null' not in older
    decoded = codec.decode(older)
    assert isinstance(decoded, RoomEvent) and decoded.author is None and decoded.message == event.message


def test_an_unregistered_type_fails_in_the_publisher(codec: EventCodec) -> None:
    with pytest.raises(TypeError):
        codec.encode(object())


@pytest.mark.parametrize(
    "data",
    [b"\x80\x04pickle", b"[1, 2]", b'{"t": "os.system", "v": "rm"}', b'{"t": "room", "v": {"kind": "x"}}'],
)
def test_foreign_bytes_are_refused(codec: EventCodec, data: bytes) -> None:
    with pytest.raises(UnknownEvent):
        codec.decode(data)


def test_a_frame_says_when_it_was_published_and_old_frames_still_decode(codec: EventCodec) -> None:
    event = Discovery("tel", bytes(range(32)), "carol")
    stamped = codec.encode(event, at=1_700_000_000.1234567)
    assert codec.decode_stamped(stamped) == (event, 1_700_000_000.123457)
    assert codec.decode_stamped(codec.encode(event)) == (event, None)
    assert codec.decode_stamped(b'{"v": 1, "at": true}') == (1, None)
