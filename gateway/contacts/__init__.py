"""Contact discovery from uploaded address books (eBuddy's User Discovery).

Owns ``identity_owners``, ``user_identities``, ``contact_books``,
``contact_index``, ``contact_upload_leases``, ``contact_fanouts`` and
``identity_verifications``; ``Me.identities``, ``Me.contacts``, the identity and
address-book mutations and the ``contactDiscovered`` subscription.

The domain template's modules (no loaders or types module: its types are few
and load users through ``users/``), with the store split by what it holds:
``store.py`` (identities, books, the reverse index), ``job_store.py`` (fan-out
jobs) and ``verification_store.py`` (one-time codes). Besides them:
``identity.py`` (an identity and its peppered hash), ``fanout.py`` (the worker
that tells uploaders of a link), ``verifier.py`` (codes issued and checked) and
``webhook.py`` (codes delivered). Tables, invariants and repairs:
``docs/data-model/contacts.md``.
"""
