"""Messenger: 1:1 conversations, talk partners with unread counts, live delivery.

Owns ``direct_messages`` and its bucket index, ``talk_partners`` and
``talk_partners_by_activity``; ``Me.talkPartners``, ``Me.conversation``,
``sendMessage``, ``markConversationRead`` and the ``messageReceived``
subscription.

The domain template's modules, with the store split by what it holds:
``store.py`` (messages and the talk-partner rows), ``activity_store.py`` (the
talk-partner recency index) and ``unread_store.py`` (unread counts, written
only by compare-and-set); ``backfill.py`` is ``gateway backfill messenger``.
Tables, invariants and repairs: ``docs/data-model/messenger.md``.
"""
