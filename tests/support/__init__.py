"""What the test tiers share: the GraphQL client, query documents and helpers per domain,
gateway processes, Redis and Node runners, and the fuzzing and hostile-request corpora.

Test modules import from here, never from one another (``tests/unit/test_test_tree.py``)."""
