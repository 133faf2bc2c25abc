"""Batched reads of the viewer's talk-partner rows (unread state per conversation)."""

from __future__ import annotations

from collections import defaultdict

from gateway.db.session import IN_CHUNK
from gateway.graph.context import Context
from gateway.graph.dataloader import Loader
from gateway.messenger.records import PartnerRecord
from gateway.messenger.store import MessengerStore

PartnerKey = tuple[str, str]
"""(owner, partner)"""


def partner_loader(context: Context) -> Loader[PartnerKey, PartnerRecord]:
    """Rows by (owner, partner): one read of each owner's partition per batch of up to ``IN_CHUNK``."""
    store = context.store(MessengerStore)

    async def load(keys: list[PartnerKey]) -> list[PartnerRecord]:
        by_owner: dict[str, list[str]] = defaultdict(list)
        for owner, partner in keys:
            by_owner[owner].append(partner)
        found: dict[PartnerKey, PartnerRecord] = {}
        for owner, partners in by_owner.items():
            for partner, record in (await store.partners_among(owner, partners)).items():
                found[(owner, partner)] = record
        return [found[key] for key in keys]

    return Loader(load_fn=load, max_batch_size=IN_CHUNK)
