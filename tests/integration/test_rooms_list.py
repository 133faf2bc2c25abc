"""``rooms(first, after)``: the whole rooms table, paged with Cassandra's paging state."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from gateway.graph.pagination import encode_cursor
from tests.support.client import Api
from tests.support.rooms import DELETE, create_room

ROOMS = """query($first: Int, $after: String) {
  rooms(first: $first, after: $after) {
    edges { cursor node { name creator { login } participantCount } }
    pageInfo { hasNextPage endCursor }
  }
}"""


async def _page(api: Api, first: int, after: str | None = None) -> dict[str, Any]:
    return (await api.ok(ROOMS, {"first": first, "after": after}))["rooms"]


async def _all_edges(api: Api, first: int) -> list[dict[str, Any]]:
    edges: list[dict[str, Any]] = []
    after = None
    while True:
        page = await _page(api, first, after)
        edges.extend(page["edges"])
        assert len(page["edges"]) <= first
        if not page["pageInfo"]["hasNextPage"]:
            return edges
        assert len(page["edges"]) == first
        after = page["pageInfo"]["endCursor"]
        assert after == page["edges"][-1]["cursor"]


async def test_rooms_pages_over_the_whole_table_without_repeats(api: Api) -> None:
    owner = await api.sign_up("owner")
    ours = set(await asyncio.gather(*(create_room(api, owner) for _ in range(12))))
    everything = [e["node"]["name"] for e in await _all_edges(api, 100)]
    assert ours <= set(everything)
    assert len(everything) == len(set(everything))
    for size in (1, 3, 7):
        assert [e["node"]["name"] for e in await _all_edges(api, size)] == everything
    last = await _page(api, 100, None)
    if len(everything) < 100:
        assert last["pageInfo"]["hasNextPage"] is False


async def test_rooms_paging_is_stable_while_rooms_come_and_go(api: Api) -> None:
    owner = await api.sign_up("owner")
    ours = list(await asyncio.gather(*(create_room(api, owner) for _ in range(20))))
    before = [e["node"]["name"] for e in await _all_edges(api, 100)]
    first_page = await _page(api, 5)
    seen = [e["node"]["name"] for e in first_page["edges"]]
    unseen_ours = [n for n in before[5:] if n in ours]
    deleted = unseen_ours[0]
    await api.ok(DELETE, {"n": deleted}, token=owner.token)
    created = set(await asyncio.gather(*(create_room(api, owner) for _ in range(10))))

    rest: list[str] = []
    after = first_page["pageInfo"]["endCursor"]
    while after is not None:
        page = await _page(api, 5, after)
        rest.extend(e["node"]["name"] for e in page["edges"])
        after = page["pageInfo"]["endCursor"] if page["pageInfo"]["hasNextPage"] else None
    # Nothing seen comes again, nothing that stayed is skipped, the deleted room is not served.
    assert not set(rest) & set(seen)
    assert len(rest) == len(set(rest))
    assert deleted not in rest
    assert [n for n in rest if n not in created] == [n for n in before[5:] if n != deleted]


async def test_a_cursor_inside_a_page_resumes_right_after_its_room(api: Api) -> None:
    owner = await api.sign_up("owner")
    ours = set(await asyncio.gather(*(create_room(api, owner) for _ in range(30))))
    page = await _page(api, 100)
    edges = page["edges"]
    names = [e["node"]["name"] for e in edges]
    inside = edges[5]
    assert names[6:12] == [e["node"]["name"] for e in (await _page(api, 6, inside["cursor"]))["edges"]]

    # A room before the cursor's room is deleted: the cursor still resumes after its room.
    victim_index = next(i for i in range(1, 40) if names[i] in ours and i + 3 < len(names) - 1)
    cursor = edges[victim_index + 2]["cursor"]
    await api.ok(DELETE, {"n": names[victim_index]}, token=owner.token)
    resumed = (await _page(api, 3, cursor))["edges"]
    assert [e["node"]["name"] for e in resumed] == names[victim_index + 3 : victim_index + 6]


async def test_rooms_costs_the_same_for_a_small_or_large_page(api: Api) -> None:
    creators = await asyncio.gather(*(api.sign_up("maker") for _ in range(40)))
    await asyncio.gather(*(create_room(api, c) for c in creators))
    small = await api.call(ROOMS, {"first": 3})
    large = await api.call(ROOMS, {"first": 40})
    assert len(large.result["rooms"]["edges"]) == 40
    assert len({e["node"]["creator"]["login"] for e in large.result["rooms"]["edges"]}) > 3
    # the scan, the look-ahead for hasNextPage, one batched read of the creators
    assert small.statements == large.statements == 3


def _cursor(state: bytes | None, offset: int = 0, name: str | None = None) -> str:
    encoded = base64.urlsafe_b64encode(state).decode().rstrip("=") if state is not None else None
    return encode_cursor({"p": encoded, "o": offset, "n": name})


GOOD_STATE = bytes.fromhex("05726f6f6d3000f07ffffffd00")  # after "room0", as Cassandra 5 writes it


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor!",
        "eyJvIjotMX0",  # {"o": -1}
        _cursor(b"AAAA"),
        _cursor(GOOD_STATE[:-1]),  # truncated
        _cursor(GOOD_STATE + b"\x00"),  # trailing bytes
        _cursor(bytes.fromhex("05726f6f6d3001ff") + GOOD_STATE[7:]),  # a row mark on a table without one
        _cursor(bytes.fromhex("03e282ac") + GOOD_STATE[6:]),  # a key that is not a room name
        _cursor(bytes.fromhex("ff") + GOOD_STATE[1:]),  # an absurd length
        _cursor(GOOD_STATE, offset=-1),
        _cursor(GOOD_STATE, offset=10**9),
    ],
)
async def test_a_forged_cursor_is_bad_user_input_and_never_reaches_cassandra(api: Api, cursor: str) -> None:
    """Cassandra answers an unparseable paging state with a protocol error that makes
    the driver drop the connection; the gateway must reject such cursors itself."""
    error = await api.error(ROOMS, {"first": 5, "after": cursor})
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "after"}
    # The gateway still talks to Cassandra.
    assert "edges" in await _page(api, 1)


async def test_a_well_formed_paging_state_for_any_name_is_just_a_position(api: Api) -> None:
    page = await _page(api, 100, _cursor(GOOD_STATE))
    assert isinstance(page["edges"], list)


async def test_rooms_arguments_are_checked(api: Api) -> None:
    assert (await api.error(ROOMS, {"first": 101}))["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert (await api.error(ROOMS, {"first": -1}))["extensions"]["code"] == "BAD_USER_INPUT"
    empty = await _page(api, 0)
    assert empty["edges"] == []


def test_paging_state_round_trips_and_rejects_what_cassandra_would_not_parse() -> None:
    from gateway.rooms.paging_state import InvalidPagingState, checked_paging_state
    from gateway.rooms.rules import ROOM_NAME

    assert checked_paging_state(GOOD_STATE, ROOM_NAME) == GOOD_STATE
    long_name = ("a" * 31).encode()
    state = bytes([31]) + long_name + bytes.fromhex("00") + bytes.fromhex("00") + bytes.fromhex("8123")
    assert checked_paging_state(state, ROOM_NAME) == state
    for bad in (b"", GOOD_STATE[:3], GOOD_STATE + b"x", bytes.fromhex("0161") + GOOD_STATE[6:]):
        with pytest.raises(InvalidPagingState):
            checked_paging_state(bad, ROOM_NAME)
