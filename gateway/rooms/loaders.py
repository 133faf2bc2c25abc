"""Batched room reads: every ``Room`` a request names by name costs one ``IN`` read per 100."""

from __future__ import annotations

from strawberry.dataloader import DataLoader

from gateway.db.session import IN_CHUNK
from gateway.graph.context import Context
from gateway.rooms.store import RoomRecord, RoomStore


def room_loader(context: Context) -> DataLoader[str, RoomRecord | None]:
    store = context.store(RoomStore)

    async def load(names: list[str]) -> list[RoomRecord | None]:
        found = await store.get_many(names)
        return [found.get(name) for name in names]

    return DataLoader(load_fn=load, max_batch_size=IN_CHUNK)
