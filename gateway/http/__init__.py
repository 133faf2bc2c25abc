"""HTTP conventions of the GraphQL endpoint, knowing no domain and no process.

The ``/graphql`` view (``view.py``) over Strawberry's aiohttp integration:
media types and request errors, body limits, batching, persisted queries and
trusted documents, multipart uploads checked before any file byte is read,
the WebSocket protocols tied to their session, CORS, compression, the client's
address behind trusted proxies, the bearer token, JSON through orjson, and the
access log.
"""
