"""GraphQL execution, shared by every domain and knowing no HTTP and no domain.

The per-request context and its DataLoaders (``context.py``,
``dataloader.py``); the schema's extensions: limits and static cost checked
before anything runs (``limits.py``, ``cost.py``), error codes and masking
(``errors.py``), CQL statement counts (``metrics.py``), metrics and access lines
(``observability.py``), run by ``hooks.py``; the executor with its fast path
for plain fields (``plain_fields.py``); and what domains build their types
from: node ids, connections and cursors, scalars, selections, input
validation, and the joining of fields onto ``User`` (``compose.py``).
"""
