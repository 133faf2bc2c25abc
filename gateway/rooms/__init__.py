"""Chat rooms: KillrChat's model and lightweight-transaction rules, bucketed history, live delivery.

Owns ``rooms``, ``room_participants``, ``room_participant_counts``,
``user_rooms``, ``room_messages`` and its bucket index (``rooms_by_user`` and
``rooms.participants`` stay for older gateways, unwritten); ``Query.room``,
``Query.rooms``, ``User.rooms``, the room mutations and the ``roomMessages``
subscription.

The domain template's modules, with the store split by what it holds:
``store.py`` (the room rows), ``member_store.py`` (memberships and their
counts) and ``history_store.py`` (messages); ``paging_state.py`` reads the
cursors of earlier gateways, ``backfill.py`` is ``gateway backfill rooms``.
Tables, invariants and repairs: ``docs/data-model/rooms.md``.
"""
