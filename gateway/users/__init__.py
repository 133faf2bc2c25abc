"""Users and sessions: accounts keyed by login, argon2id password hashes, bearer sessions.

Owns the ``users`` and ``sessions`` tables, the ``User`` type every other domain
returns, ``Query.user`` and the account mutations (``signUp``, ``signIn``,
``signOut``, ``updateProfile``). It builds on no other domain; the fields other
domains add to ``User`` are joined onto it at ``gateway/schema.py``.

The domain template's modules (records, store, loaders, rules, service, types,
schema, seed), and ``passwords.py`` with ``hashing_pool.py``: argon2id on a
bounded thread pool of its own; ``session_cache.py``: the sessions a process has looked
up, kept so an authenticated request reads none, dropped by revocations through the
broker. Tables: ``docs/data-model/users.md``.
"""
